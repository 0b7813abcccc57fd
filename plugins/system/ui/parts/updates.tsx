/** hostd's own updates: the last check's result, and for admins the install with its progress and outcome. */
import { useEffect, useState } from 'preact/hooks'
import {
  Async,
  Badge,
  Button,
  Card,
  Icon,
  KeyValues,
  ProgressBar,
  errorMessage,
  formatDateTime,
  formatRelative,
  useResource,
  type PageContext,
} from '@hostd/ui'
import { updateState, type Settings, type UpdateInstall, type UpdateStatus, type Version } from './model.ts'

type Phase =
  | { kind: 'installing' }
  | { kind: 'installed'; result: UpdateInstall }
  | { kind: 'restarting'; version: string }
  | { kind: 'failed'; message: string }
  | null

export function UpdatesCard({
  ctx,
  settings,
  helperAvailable,
  generation,
}: {
  ctx: PageContext
  settings: Settings | undefined
  helperAvailable: boolean
  generation: number
}) {
  // While an install runs (this page's or another admin's), follow its state.
  const status = useResource((signal) => ctx.api.get<UpdateStatus>('/api/updates', { signal }), [generation], {
    every: (u) => (u?.state === 'installing' ? 1500 : undefined),
  })
  const [phase, setPhase] = useState<Phase>(null)
  // The commit and plugin API version: kept here, off the overview.
  const version = useResource((signal) => ctx.api.get<Version>('/api/version', { signal }), [])

  // After a real restart: ask for the version until the new one answers (the requests fail while it restarts).
  const restartedTo = phase?.kind === 'restarting' ? phase.version : null
  const running = useResource(
    (signal) => (restartedTo ? ctx.api.get<Version>('/api/version', { signal }) : Promise.resolve(null)),
    [restartedTo],
    { every: restartedTo ? 2000 : undefined },
  )
  useEffect(() => {
    if (!restartedTo || running.data?.version !== restartedTo) return
    ctx.toast.success(`hostd ${restartedTo} is running`)
    setPhase(null)
    status.reload()
  }, [restartedTo, running.data])

  const install = async (u: UpdateStatus) => {
    const ok = await ctx.confirm({
      title: `Install hostd ${u.latestVersion}?`,
      message:
        'hostd downloads the release, checks its signature and checksum, installs it and restarts itself. ' +
        'Pages reconnect when it is back; containers keep running.',
      confirmLabel: 'Install and restart',
    })
    if (!ok) return
    setPhase({ kind: 'installing' })
    status.reload()
    try {
      const result = await ctx.api.post<UpdateInstall>('/api/updates/install')
      setPhase(
        result.restart.dryRun ? { kind: 'installed', result } : { kind: 'restarting', version: result.installed },
      )
    } catch (err) {
      setPhase({ kind: 'failed', message: errorMessage(err) })
    }
    status.reload()
  }

  return (
    <Card title="Updates">
      <Async resource={status} label="Reading the update status…">
        {(u) => (
          <div class="system-stack">
            <KeyValues
              items={[
                ['Installed', <span class="mono">{u.currentVersion}</span>],
                [
                  'Commit',
                  version.data?.commit ? (
                    <code>{version.data.commit.slice(0, 12)}</code>
                  ) : (
                    <span class="muted">unknown</span>
                  ),
                ],
                ['Plugin API', <span class="mono">{version.data?.apiVersion ?? '…'}</span>],
                [
                  'Latest release',
                  u.latestVersion ? <span class="mono">{u.latestVersion}</span> : <span class="muted">unknown</span>,
                ],
                ['Status', <Badge tone={updateState(u).tone}>{updateState(u).label}</Badge>],
                [
                  'Last checked',
                  u.checkedAt ? (
                    <time dateTime={u.checkedAt} title={formatDateTime(u.checkedAt)}>
                      {formatRelative(u.checkedAt)}
                    </time>
                  ) : (
                    <span class="muted">not yet</span>
                  ),
                ],
              ]}
            />
            {settings && !settings.hostdUpdates.feedConfigured && (
              <p class="muted">
                Update checks are off: the server has no release feed (HOSTD_UPDATE_FEED_URL and
                HOSTD_UPDATE_PUBLIC_KEY).
              </p>
            )}
            {settings?.hostdUpdates.feedConfigured && (
              <p class="muted">Checked every {settings.hostdUpdates.checkEveryHours} hours.</p>
            )}
            {u.error && (
              <p class="form-error" role="alert">
                <Icon name="circle-alert" /> The last check failed: {u.error}
              </p>
            )}
            {u.updateAvailable && u.notes && (
              <div>
                <p class="cell-strong">What is new in {u.latestVersion}</p>
                <p class="system-notes">{u.notes}</p>
              </div>
            )}
            {(phase?.kind === 'installing' || u.state === 'installing') && (
              <ProgressBar label={`Installing hostd ${u.latestVersion ?? ''}`} detail="Downloading and verifying…" />
            )}
            {phase?.kind === 'restarting' && (
              <ProgressBar
                label={`hostd ${phase.version} is installed and restarting`}
                detail="This page reconnects when it is back"
              />
            )}
            {phase?.kind === 'installed' && (
              <p class="notice" role="status">
                <Icon name="circle-check" /> hostd {phase.result.installed} is installed in{' '}
                <span class="mono">{phase.result.path}</span>. The root helper is in dry run, so hostd did not restart
                (it would have run "{(phase.result.restart.argv ?? []).join(' ')}"): restart hostd to run the new
                version.
              </p>
            )}
            {phase?.kind === 'failed' && (
              <p class="form-error" role="alert">
                <Icon name="circle-alert" /> Nothing was installed: {phase.message}
              </p>
            )}
            {ctx.can('admin') && u.updateAvailable && u.state === 'idle' && phase?.kind !== 'installing' && (
              <div>
                <Button variant="primary" icon="download" disabled={!helperAvailable} onClick={() => void install(u)}>
                  Install {u.latestVersion}
                </Button>
              </div>
            )}
          </div>
        )}
      </Async>
    </Card>
  )
}
