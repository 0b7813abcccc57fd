/**
 * Updating containers to the newest image of their reference, over /api/containers/update: pick them, then watch
 * each one's pull (a bar per layer), recreate and outcome (updated, up to date, rolled back, failed).
 */
import { useState } from 'preact/hooks'
import {
  Async,
  Badge,
  Button,
  Card,
  Checkbox,
  Empty,
  Icon,
  PageHeader,
  ProgressList,
  Spinner,
  useResource,
  type PageContext,
  type Tone,
} from '@hostd/ui'
import { ContainerIcon, PullLayers } from './common.tsx'
import { containerPath, type Container, type ContainerList, type PullMessage } from './model.ts'

type Outcome =
  | { status: 'updated'; name: string; id: string; image: string; previousImageId: string; imageId: string }
  | { status: 'up-to-date'; name: string; id: string; image: string }
  | { status: 'rolled-back' | 'failed'; name: string; id: string; image: string; message: string }

type UpdateMessage =
  | { type: 'step'; container: string; step: 'pull' | 'recreate' | 'rollback' }
  | ({ type: 'pull'; container: string } & PullMessage)
  | ({ type: 'container'; container: string } & Outcome)
  | { type: 'done'; results: Outcome[] }
  | { type: 'result'; ok: false; error: string; message: string }

interface Target {
  name: string
  step?: 'pull' | 'recreate' | 'rollback'
  layers: PullLayers
  outcome?: Outcome
}

interface UpdateRun {
  targets: Target[]
  done: boolean
  error?: string
}

const OUTCOME: Record<Outcome['status'], { tone: Tone; label: string }> = {
  updated: { tone: 'success', label: 'Updated' },
  'up-to-date': { tone: 'neutral', label: 'Already up to date' },
  'rolled-back': { tone: 'warning', label: 'Rolled back' },
  failed: { tone: 'danger', label: 'Failed' },
}
const STEP = {
  pull: 'Pulling the new image…',
  recreate: 'Recreating with the same settings…',
  rollback: 'The new container did not start: restoring the old one…',
}

function TargetProgress({ ctx, target, running }: { ctx: PageContext; target: Target; running: boolean }) {
  const o = target.outcome
  return (
    <li class="ctr-update-target">
      <div class="ctr-update-head">
        <ContainerIcon name={target.name} size={24} />
        <strong>
          {o ? <a href={containerPath(ctx.base, { id: o.id, name: o.name })}>{target.name}</a> : target.name}
        </strong>
        {o ? (
          <Badge tone={OUTCOME[o.status].tone}>{OUTCOME[o.status].label}</Badge>
        ) : (
          <span class="detail ctr-update-step">
            {target.step && running && <Spinner size={14} />}
            {target.step ? STEP[target.step] : running ? 'Waiting…' : 'Not reached'}
          </span>
        )}
      </div>
      {o && 'message' in o && <p class={o.status === 'failed' ? 'ctr-error-text' : 'detail'}>{o.message}</p>}
      {o?.status === 'updated' && (
        <p class="detail">
          Now on {o.imageId.replace(/^sha256:/, '').slice(0, 12)} (was{' '}
          {o.previousImageId.replace(/^sha256:/, '').slice(0, 12)}).
        </p>
      )}
      {!o && target.layers.items.length > 0 && (
        <ProgressList label={`Layers for ${target.name}`} items={target.layers.items} />
      )}
    </li>
  )
}

export function UpdatesView({ ctx }: { ctx: PageContext }) {
  const list = useResource((signal) => ctx.api.get<ContainerList>('/api/containers', { signal }), [])
  const preselect = new URLSearchParams(ctx.location.value.search).get('select')
  const [showAll, setShowAll] = useState(false)
  const [picked, setPicked] = useState<Set<string> | null>(null)
  const [run, setRun] = useState<UpdateRun | null>(null)
  const [, redraw] = useState(0)
  const operator = ctx.can('operator')

  const start = (names: string[]) => {
    const job: UpdateRun = { targets: names.map((name) => ({ name, layers: new PullLayers() })), done: false }
    setRun(job)
    const changed = () => redraw((n) => n + 1)
    const target = (name: string) => job.targets.find((t) => t.name === name)
    const ws = ctx.socket('/api/containers/update')
    ws.onopen = () => ws.send(JSON.stringify({ containers: names }))
    ws.onmessage = (e: MessageEvent<string>) => {
      const m = JSON.parse(e.data) as UpdateMessage
      if (m.type === 'step') target(m.container)!.step = m.step
      else if (m.type === 'pull') target(m.container)?.layers.add(m)
      else if (m.type === 'container') {
        const { type: _, container, ...outcome } = m
        target(container)!.outcome = outcome as Outcome
      } else if (m.type === 'done') {
        job.done = true
        const counts: Record<string, number> = {}
        for (const r of m.results) counts[r.status] = (counts[r.status] ?? 0) + 1
        const text = Object.entries(counts)
          .map(([status, n]) => `${n} ${OUTCOME[status as Outcome['status']].label.toLowerCase()}`)
          .join(', ')
        if (counts.failed || counts['rolled-back']) ctx.toast.error(`Update finished: ${text}`)
        else ctx.toast.success(`Update finished: ${text}`)
      } else if (m.type === 'result' && !m.ok) job.error = m.message
      changed()
    }
    ws.onclose = (e) => {
      if (!job.done && !job.error)
        job.error =
          e.reason ||
          'The connection to the server closed before the update finished. Check the list for the containers’ state.'
      job.done = true
      changed()
      list.reload()
    }
  }

  const header = (
    <>
      <nav class="ctr-back" aria-label="Breadcrumb">
        <a href={ctx.base}>Containers</a> <span aria-hidden="true">/</span> <span aria-current="page">Updates</span>
      </nav>
      <PageHeader
        title="Update containers"
        description={
          'Each one gets the newest image of its own reference and is recreated with the same settings, name, ' +
          'auto-start and icon. If the new one does not start, the old one is put back.'
        }
      />
    </>
  )

  if (run) {
    return (
      <>
        {header}
        <Card title={run.done ? 'Update finished' : 'Updating…'}>
          <div class="stack">
            <ul class="ctr-update-list" aria-label="Update progress" aria-live="polite">
              {run.targets.map((t) => (
                <TargetProgress key={t.name} ctx={ctx} target={t} running={!run.done} />
              ))}
            </ul>
            {run.error && (
              <p class="form-error" role="alert">
                <Icon name="circle-alert" /> {run.error}
              </p>
            )}
            {run.done && (
              <div class="form-actions">
                <Button onClick={() => setRun(null)}>Update others</Button>
                <Button variant="primary" onClick={() => ctx.navigate(ctx.base)}>
                  Back to containers
                </Button>
              </div>
            )}
          </div>
        </Card>
      </>
    )
  }

  return (
    <>
      {header}
      <Async resource={list} label="Loading containers…">
        {(data) => {
          const withUpdates = data.items.filter((c) => c.updateAvailable)
          const candidates: Container[] = showAll
            ? data.items
            : data.items.filter((c) => c.updateAvailable || c.name === preselect)
          const selected =
            picked ?? new Set(candidates.filter((c) => c.updateAvailable || c.name === preselect).map((c) => c.name))
          const toggle = (name: string, on: boolean) => {
            const next = new Set(selected)
            if (on) next.add(name)
            else next.delete(name)
            setPicked(next)
          }
          const chosen = candidates.filter((c) => selected.has(c.name)).map((c) => c.name)
          return (
            <Card
              title={
                withUpdates.length
                  ? `${withUpdates.length} container${withUpdates.length === 1 ? ' has' : 's have'} a newer image`
                  : 'Containers'
              }
            >
              <div class="stack">
                {candidates.length === 0 ? (
                  <Empty icon="circle-check" title="Every container is up to date">
                    hostd asks the registry about each image in the background (every hour by default). To pull again
                    anyway, show all containers.
                  </Empty>
                ) : (
                  <fieldset class="ctr-fieldset">
                    <legend>Containers to update</legend>
                    {candidates.map((c) => (
                      <Checkbox
                        key={c.id}
                        name={`update-${c.name}`}
                        label={c.name}
                        checked={selected.has(c.name)}
                        disabled={!operator}
                        hint={`${c.image}${c.updateAvailable ? ' · a newer image is available' : ''}`}
                        onChange={(e) => toggle(c.name, e.currentTarget.checked)}
                      />
                    ))}
                  </fieldset>
                )}
                <Checkbox
                  name="show-all"
                  label="Show all containers (update pulls each one's image again)"
                  checked={showAll}
                  onChange={(e) => setShowAll(e.currentTarget.checked)}
                />
                <div class="form-actions">
                  <Button onClick={() => ctx.navigate(ctx.base)}>Cancel</Button>
                  {operator && (
                    <Button
                      variant="primary"
                      icon="download"
                      disabled={chosen.length === 0}
                      onClick={() => start(chosen)}
                    >
                      {chosen.length === 1 ? `Update ${chosen[0]}` : `Update ${chosen.length} containers`}
                    </Button>
                  )}
                </div>
              </div>
            </Card>
          )
        }}
      </Async>
    </>
  )
}
