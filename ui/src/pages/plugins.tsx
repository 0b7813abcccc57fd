import type { Static } from '@sinclair/typebox'
import type { ComponentChildren } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import type { ExtensionSchema, PermissionsSchema, RemovedSchema } from '../../../kernel/src/plugins/routes.ts'
import { ApiError, errorMessage, upload } from '../kit/api.ts'
import { Button } from '../kit/button.tsx'
import type { SessionUser } from '../kit/context.ts'
import { confirm } from '../kit/dialog.tsx'
import { Checkbox } from '../kit/form.tsx'
import { Async, Badge, Callout, Empty, ProgressBar, type Tone } from '../kit/feedback.tsx'
import { formatBytes } from '../kit/format.ts'
import { Icon } from '../kit/icons.tsx'
import { Card, KeyValues, PageHeader } from '../kit/layout.tsx'
import { FileDrop } from '../kit/live.tsx'
import { useResource } from '../kit/resource.ts'
import { toast } from '../kit/toast.tsx'
import { EXTENSIONS_CHANGED } from '../shell/extensions.ts'
import { api, sessionEnded } from '../shell/session.ts'

/** A plugin as `GET /api/extensions` lists it (the kernel's schema, as a type only). */
type Extension = Static<typeof ExtensionSchema>
type Permissions = Static<typeof PermissionsSchema>
type Removed = Static<typeof RemovedSchema>

/** What the toast says after a removal: what was deleted, or what was kept. */
function removedMessage({ id, deleted, kept }: Removed, deleteData: boolean): string {
  const what = (d: Removed['kept']) =>
    [
      d.dataFolder ? 'its data folder' : null,
      d.settings.length > 0 ? `${d.settings.length} setting${d.settings.length === 1 ? '' : 's'}` : null,
      d.tables.length > 0 ? `its tables ${d.tables.join(', ')}` : null,
    ].filter((part) => part !== null)
  const parts = what(deleteData ? deleted : kept)
  if (parts.length === 0) return `${id} was removed; it had no data${deleteData ? ' to delete' : ''}`
  return `${id} was removed; ${deleteData ? 'deleted' : 'kept'}: ${parts.join(', ')}`
}

const STATE_TONE: Record<Extension['state'], Tone> = {
  active: 'success',
  starting: 'accent',
  restarting: 'warning',
  unavailable: 'warning',
  disabled: 'neutral',
  failed: 'danger',
}
/** Loads again quickly while a plugin is on its way somewhere, slowly otherwise (a folder dropped in by hand shows). */
const BUSY_MS = 1500
const IDLE_MS = 15_000

const busy = (list: Extension[] | undefined) =>
  (list ?? []).some((e) => e.state === 'starting' || e.state === 'restarting')

/** The navigation and other tabs' lists follow a change at once. */
const changed = () => dispatchEvent(new Event(EXTENSIONS_CHANGED))

/** The plugin id named by the address (`/plugins#hello`), if any. */
const targetId = () => decodeURIComponent(location.hash.slice(1))

function list(items: string[]): ComponentChildren {
  return items.length === 0 ? <span class="muted">none</span> : <span class="mono">{items.join(', ')}</span>
}

/** What a plugin may do, as a description list; empty parts are said, so "none" is visible rather than missing. */
function permissionItems(p: Permissions): [string, ComponentChildren][] {
  return [
    ['Services of other plugins', list(Object.entries(p.services).map(([token, access]) => `${token} (${access})`))],
    ['Root helper actions', list(p.helper)],
    ['Outbound network', p.network ? <strong>yes</strong> : <span class="muted">no</span>],
    ['Kernel services', list(p.kernel)],
  ]
}

/** A running plugin's routes and sockets, each with its method and role; null when it does not run. */
function Endpoints({ e }: { e: Extension }) {
  if (!e.routes && !e.sockets) return <span class="muted">known once it runs</span>
  const routes = e.routes ?? []
  const sockets = e.sockets ?? []
  if (routes.length === 0 && sockets.length === 0) return <span class="muted">none</span>
  return (
    <ul class="plugin-endpoints" aria-label={`Routes and sockets of ${e.id}`}>
      {[...routes, ...sockets.map((so) => ({ ...so, method: 'WS' }))].map((r) => (
        <li key={`${r.method} ${r.path}`}>
          <span class={`plugin-method method-${r.method.toLowerCase()}`}>{r.method}</span>
          <span class="mono">{r.path}</span>
          <span class="muted">
            {r.role}
            {r.sessionOnly ? ', session only' : ''}
          </span>
        </li>
      ))}
    </ul>
  )
}

function pagesOf(e: Extension): ComponentChildren {
  const pages = e.ui?.pages.map((p) => `${p.path} (${p.role})`) ?? e.dormantPages?.map((p) => p.path) ?? []
  return pages.length > 0 ? list(pages) : null
}

function PluginEntry({
  plugin: e,
  admin,
  target,
  onChanged,
}: {
  plugin: Extension
  admin: boolean
  target: boolean
  onChanged: () => void
}) {
  const [working, setWorking] = useState<string | null>(null)
  const headingId = `plugin-${e.id}-name`
  const run = async <T,>(what: string, action: () => Promise<T>, done: string | ((result: T) => string)) => {
    setWorking(what)
    try {
      const result = await action()
      toast.success(typeof done === 'string' ? done : done(result))
    } catch (err) {
      toast.error(err)
    } finally {
      setWorking(null)
      onChanged()
      changed()
    }
  }

  const toggle = async () => {
    const disable = e.state !== 'disabled'
    if (
      disable &&
      !(await confirm({
        title: `Disable ${e.id}?`,
        message:
          'Its routes, pages and overview cards go away at once, and it stays off after a restart until enabled again. ' +
          'Its data and settings are kept.',
        confirmLabel: 'Disable plugin',
        danger: true,
      }))
    )
      return
    await run(
      disable ? 'disable' : 'enable',
      () => api.post(`/api/extensions/${e.id}/${disable ? 'disable' : 'enable'}`),
      `${e.id} is ${disable ? 'disabled' : 'enabled'}`,
    )
  }

  const remove = async () => {
    let deleteData = false
    if (
      !(await confirm({
        title: `Remove ${e.id}?`,
        message: (
          <div class="stack">
            <p>
              Its folder is deleted and it stops at once. What it was granted and whether it was trusted are forgotten.
            </p>
            <p>
              <strong>Kept</strong> unless you tick the box: its data folder on the server (
              <span class="mono">{`<data dir>/plugin-data/${e.id}/`}</span>), its settings and its database tables.
              Installing it again finds them.
            </p>
            <Checkbox
              name="deleteData"
              label="Also delete its data (its data folder, settings and tables)"
              hint="This cannot be undone."
              onChange={(ev: Event) => {
                deleteData = (ev.currentTarget as HTMLInputElement).checked
              }}
            />
          </div>
        ),
        confirmLabel: 'Remove plugin',
        danger: true,
      }))
    )
      return
    await run(
      'remove',
      () => api.post<Removed>(`/api/extensions/${e.id}/remove`, { deleteData }),
      (answer) => removedMessage(answer, deleteData),
    )
  }

  const trust = async () => {
    const trusting = !e.trusted
    if (
      !(await confirm(
        trusting
          ? {
              title: `Trust ${e.id}?`,
              message: (
                <div class="stack">
                  <p>
                    It will run inside the daemon's own process, with the daemon's full power: it can read and change
                    everything the daemon can (every setting, user and session, the root helper), whatever permissions
                    it declares.
                  </p>
                  <p>Trust only code you have read, or whose author you trust. It is loaded again at once.</p>
                </div>
              ),
              confirmLabel: 'Trust and reload',
              danger: true,
            }
          : {
              title: `Stop trusting ${e.id}?`,
              message:
                'It runs again in a sandboxed process of its own, with only the permissions it declares. It is loaded again at once.',
              confirmLabel: 'Stop trusting',
            },
      ))
    )
      return
    await run(
      'trust',
      () => api.post(`/api/extensions/${e.id}/trust`, { trusted: trusting }),
      trusting ? `${e.id} is trusted and runs in the daemon's process` : `${e.id} runs sandboxed again`,
    )
  }

  const approve = async () => {
    const held = e.approval!
    if (
      !(await confirm({
        title: `Approve ${e.id} ${held.version}?`,
        message: (
          <div class="stack">
            <p>
              {held.granted === null
                ? 'It starts at once, granted what it asks for:'
                : `It is activated at once and granted what it asks for beyond ${held.granted}:`}
            </p>
            <KeyValues items={permissionItems(held.asks)} />
          </div>
        ),
        confirmLabel: 'Approve and activate',
      }))
    )
      return
    await run(
      'approve',
      () => api.post(`/api/extensions/${e.id}/approve`, { version: held.version }),
      `${e.id} ${held.version} is approved`,
    )
  }

  const pages = pagesOf(e)
  return (
    <li
      class={`plugin-entry state-${e.state}${target ? ' is-target' : ''}`}
      id={`plugin-${e.id}`}
      aria-labelledby={headingId}
      tabIndex={-1}
    >
      <div class="plugin-head">
        <span class="plugin-icon" aria-hidden="true">
          <Icon name={e.builtin ? 'package' : 'puzzle'} size={20} />
        </span>
        <div class="plugin-title">
          <h3 id={headingId}>{e.id}</h3>
          <span class="mono muted">{e.version ?? 'version unknown'}</span>
        </div>
        <div class="plugin-badges">
          <Badge tone={STATE_TONE[e.state]}>{e.state}</Badge>
          <Badge>{e.builtin ? 'built-in' : 'third-party'}</Badge>
          {!e.builtin && <Badge tone={e.trusted ? 'warning' : 'accent'}>{e.trusted ? 'trusted' : 'isolated'}</Badge>}
        </div>
      </div>
      {e.description && <p class="plugin-description">{e.description}</p>}

      {e.state === 'failed' && (
        <div class="plugin-problem tone-danger">
          <Icon name="circle-alert" size={16} />
          <div>
            <strong>It failed to load: </strong>
            <span class="plugin-error">{e.error ?? 'no reason was given'}</span>
            {e.errorOrigin && (
              <p class="plugin-origin">
                at <code>{e.errorOrigin}</code>
              </p>
            )}
          </div>
        </div>
      )}
      {e.reason && !e.approval && (
        <div class="plugin-problem tone-warning">
          <Icon name="triangle-alert" size={16} />
          <span>{e.reason}</span>
        </div>
      )}
      {e.warnings && e.warnings.length > 0 && (
        <div class="plugin-problem tone-warning">
          <Icon name="info" size={16} />
          <div>
            <strong>Warnings:</strong>
            <ul>
              {e.warnings.map((w) => (
                <li key={w}>{w}</li>
              ))}
            </ul>
          </div>
        </div>
      )}
      {e.approval && (
        <div class="plugin-approval">
          {e.approval.granted === null ? (
            <p>
              <Icon name="shield" size={16} />{' '}
              <strong>Version {e.approval.version} is installed and waits for approval before it first runs.</strong> It
              asks for:
            </p>
          ) : (
            <p>
              <Icon name="shield" size={16} /> <strong>Version {e.approval.version} is waiting for approval.</strong> It
              asks for more than {e.approval.granted} was granted; until then{' '}
              {e.state === 'active' ? `${e.version} keeps running` : 'it does not run'}.
            </p>
          )}
          <KeyValues items={permissionItems(e.approval.asks)} />
          {admin && (
            <div class="plugin-actions">
              <Button
                variant="primary"
                size="sm"
                icon="check"
                busy={working === 'approve'}
                disabled={working !== null}
                aria-label={`Approve ${e.id} ${e.approval.version}`}
                onClick={() => void approve()}
              >
                Approve
              </Button>
              {e.approval.granted === null && (
                <Button
                  size="sm"
                  variant="ghost"
                  icon="trash"
                  busy={working === 'remove'}
                  disabled={working !== null}
                  aria-label={`Remove ${e.id} without running it`}
                  onClick={() => void remove()}
                >
                  Remove
                </Button>
              )}
            </div>
          )}
        </div>
      )}

      <div class="plugin-details">
        {e.permissions ? (
          <KeyValues
            items={[
              // A held first install lists what it asks for above, with Approve.
              ...(e.builtin || e.approval?.granted === null ? [] : permissionItems(e.permissions)),
              ...(pages ? ([['Pages', pages]] as [string, ComponentChildren][]) : []),
              [
                'Runs',
                e.builtin
                  ? "in the daemon's process"
                  : e.trusted
                    ? "in the daemon's process (trusted)"
                    : 'sandboxed, in its own process',
              ],
              ['Routes and sockets', <Endpoints key="endpoints" e={e} />],
            ]}
          />
        ) : (
          <p class="muted">What it asks for is not known: its definition could not be read.</p>
        )}
      </div>

      {admin && (
        <div class="plugin-actions">
          <Button
            size="sm"
            icon={e.state === 'disabled' ? 'play' : 'power'}
            busy={working === 'enable' || working === 'disable'}
            disabled={working !== null}
            aria-label={`${e.state === 'disabled' ? 'Enable' : 'Disable'} ${e.id}`}
            onClick={() => void toggle()}
          >
            {e.state === 'disabled' ? 'Enable' : 'Disable'}
          </Button>
          {!e.builtin && (
            <Button
              size="sm"
              variant="ghost"
              icon="shield"
              busy={working === 'trust'}
              disabled={working !== null}
              aria-label={`${e.trusted ? 'Stop trusting' : 'Trust'} ${e.id}`}
              onClick={() => void trust()}
            >
              {e.trusted ? 'Stop trusting' : 'Trust'}
            </Button>
          )}
          {!e.builtin && (
            <Button
              size="sm"
              icon="trash"
              busy={working === 'remove'}
              disabled={working !== null}
              aria-label={`Remove ${e.id}`}
              onClick={() => void remove()}
            >
              Remove
            </Button>
          )}
        </div>
      )}
    </li>
  )
}

type Upload =
  | { state: 'idle' }
  | { state: 'sending'; name: string; loaded: number; total: number }
  | { state: 'done'; name: string; plugin: Extension }
  | { state: 'failed'; name: string; error: unknown }

/**
 * What the answer to an install says, in a sentence and a list of what it was granted, kept to what the plugin's entry
 * says now (`current`): approved since, the sentence follows.
 */
function UploadResult({ result, current }: { result: Upload; current: Extension[] | undefined }) {
  if (result.state === 'failed') {
    const code = result.error instanceof ApiError && result.error.code ? ` (${result.error.code})` : ''
    return (
      <Callout title={`${result.name} was not installed`}>
        {errorMessage(result.error)}
        {code}
      </Callout>
    )
  }
  if (result.state !== 'done') return null
  const p = current?.find((e) => e.id === result.plugin.id) ?? result.plugin
  if (p.approval?.granted === null)
    return (
      <div class="plugin-result tone-warning" role="status">
        <strong>
          {p.id} {p.approval.version} is installed and waits for your approval
        </strong>
        <p>
          It does not run until you approve what it asks for. Its entry below lists it, with Approve and Remove buttons.
        </p>
        <KeyValues items={permissionItems(p.approval.asks)} />
      </div>
    )
  if (p.approval)
    return (
      <div class="plugin-result tone-warning" role="status">
        <strong>
          {p.id} {p.approval.version} is waiting for approval
        </strong>
        <p>
          It asks for more than {p.version} was granted, so {p.version} keeps running. Its entry below says what more,
          with the Approve button.
        </p>
      </div>
    )
  if (p.state === 'failed')
    return (
      <div class="plugin-result tone-danger" role="status">
        <strong>
          {p.id} {p.version ?? ''} was installed but failed to load
        </strong>
        <p>
          {p.error}
          {p.errorOrigin && (
            <>
              {' '}
              at <code>{p.errorOrigin}</code>
            </>
          )}
        </p>
      </div>
    )
  return (
    <div class="plugin-result tone-success" role="status">
      <strong>
        Installed {p.id} {p.version}: {p.state}
      </strong>
      {p.permissions && (
        <>
          <p>It was granted what it declares:</p>
          <KeyValues items={permissionItems(p.permissions)} />
        </>
      )}
    </div>
  )
}

function InstallCard({ onInstalled, plugins }: { onInstalled: () => void; plugins: Extension[] | undefined }) {
  const [result, setResult] = useState<Upload>({ state: 'idle' })
  const send = async (file: File) => {
    setResult({ state: 'sending', name: file.name, loaded: 0, total: file.size })
    try {
      // The route takes the raw tarball as application/gzip, whatever type the browser guessed for the file.
      const plugin = await upload<Extension>(
        '/api/extensions/install',
        file.slice(0, file.size, 'application/gzip'),
        {
          onProgress: (loaded, total) => setResult({ state: 'sending', name: file.name, loaded, total }),
        },
        sessionEnded,
      )
      setResult({ state: 'done', name: file.name, plugin })
    } catch (err) {
      setResult({ state: 'failed', name: file.name, error: err })
    } finally {
      onInstalled()
      changed()
    }
  }
  return (
    <Card title="Install a plugin">
      <p class="muted card-intro">
        A plugin package is the <span class="mono">.tgz</span> file <span class="mono">npm pack</span> makes of a
        plugin's folder. A package with the id of an installed plugin upgrades it. A new plugin that asks for services
        of other plugins, root helper actions or network, and an upgrade that asks for more than was granted, wait for
        your approval. A third-party plugin runs sandboxed, with only what it declares.
      </p>
      <FileDrop
        label="Plugin package"
        accept=".tgz,.tar.gz,application/gzip"
        multiple={false}
        disabled={result.state === 'sending'}
        onFiles={([file]) => void send(file!)}
      >
        Drop a plugin package (.tgz) here, or
      </FileDrop>
      {result.state === 'sending' && (
        <ProgressBar
          label={`Uploading ${result.name}`}
          value={result.loaded}
          max={result.total}
          detail={
            result.loaded >= result.total
              ? 'Installing…'
              : `${formatBytes(result.loaded)} of ${formatBytes(result.total)}`
          }
        />
      )}
      <UploadResult result={result} current={plugins} />
    </Card>
  )
}

function Summary({ plugins }: { plugins: Extension[] }) {
  const counts = new Map<Extension['state'], number>()
  for (const p of plugins) counts.set(p.state, (counts.get(p.state) ?? 0) + 1)
  const held = plugins.filter((p) => p.approval).length
  return (
    <p class="plugin-summary">
      <span>
        {plugins.length} {plugins.length === 1 ? 'plugin' : 'plugins'}
      </span>
      {[...counts].map(([state, n]) => (
        <Badge key={state} tone={STATE_TONE[state]}>
          {n} {state}
        </Badge>
      ))}
      {held > 0 && <Badge tone="warning">{held} awaiting approval</Badge>}
    </p>
  )
}

export default function PluginsPage({ user }: { user: SessionUser }) {
  const admin = user.role === 'admin'
  const plugins = useResource((signal) => api.get<Extension[]>('/api/extensions', { signal }), [], {
    every: (data) => (busy(data) ? BUSY_MS : IDLE_MS),
  })
  // The shell's router pushes `/plugins#id` (which re-renders the page) and a link on this page changes only the hash.
  const target = targetId()
  const [, setTick] = useState(0)
  useEffect(() => {
    const follow = () => setTick((t) => t + 1)
    addEventListener('hashchange', follow)
    addEventListener('popstate', follow)
    return () => {
      removeEventListener('hashchange', follow)
      removeEventListener('popstate', follow)
    }
  }, [])
  const found = Boolean(target && plugins.data?.some((p) => p.id === target))
  useEffect(() => {
    if (!found) return
    const entry = document.getElementById(`plugin-${target}`)
    // After the heading the shell focuses on navigation, so the entry is where a screen reader and the view go.
    const t = setTimeout(() => {
      entry?.scrollIntoView({ block: 'center' })
      entry?.focus({ preventScroll: true })
    }, 50)
    return () => clearTimeout(t)
  }, [found, target])

  return (
    <div class="plugins-page">
      <PageHeader
        title="Plugins"
        description={
          admin
            ? 'Everything that extends this server: its state, what it may do, and why one did not load.'
            : 'Everything that extends this server: its state, what it may do, and why one did not load. Only an admin can change them.'
        }
      />
      {admin && <InstallCard onInstalled={plugins.reload} plugins={plugins.data} />}
      <section class="section-gap" aria-labelledby="plugins-list-title">
        <h2 id="plugins-list-title" class="sr-only">
          Installed plugins
        </h2>
        <Async
          resource={plugins}
          label="Loading the plugins…"
          errorTitle="The plugins could not be loaded"
          isEmpty={(list) => list.length === 0}
          empty={
            <Empty icon="puzzle" title="No plugins">
              {admin ? 'Install one above, or drop its folder into the plugins directory.' : 'None is installed.'}
            </Empty>
          }
        >
          {(list) => (
            <>
              <Summary plugins={list} />
              <ul class="plugin-list" aria-label="Plugins">
                {list.map((p) => (
                  <PluginEntry
                    key={p.id}
                    plugin={p}
                    admin={admin}
                    target={p.id === target}
                    onChanged={plugins.reload}
                  />
                ))}
              </ul>
            </>
          )}
        </Async>
      </section>
    </div>
  )
}
