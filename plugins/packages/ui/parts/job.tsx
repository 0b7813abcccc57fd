/**
 * One package job over /api/packages/exec, as signals: the page starts it, the job panel shows its progress bar
 * (phase, package, percent from apt's status fd), apt's output lines and the result. Kept in signals so the
 * messages re-render only the panel, never the package tables beside it.
 */
import { computed, signal, type ReadonlySignal, type Signal } from '@preact/signals'
import { useEffect, useRef } from 'preact/hooks'
import { Badge, Card, ErrorDetails, IconButton, ProgressBar, formatDateTime, type PageContext } from '@hostd/ui'
import type { ExecRequest, Job } from '../../src/schemas.ts'

export interface Progress {
  phase: string
  package: string | null
  percent: number
  text: string
}

/** The last message: a job's outcome (`exitCode`), or a refusal before it ran (`error`, with the running `job` when busy). */
export interface JobResult {
  ok: boolean
  exitCode?: number
  error?: string
  message?: string
  /** apt's own words behind a translated error (`message` then names the cause and the next step). */
  details?: { raw: string }
  job?: Job
}

/** What the socket sends (README): the job accepted, apt's progress and output lines, then the result. */
type JobMessage =
  | { type: 'accepted'; job: Job }
  | ({ type: 'progress' } & Progress)
  | { type: 'line'; text: string }
  | ({ type: 'result' } & JobResult)

export interface JobState {
  /** Counts the jobs of this page, so a new one starts with an empty log. */
  seq: number
  request: ExecRequest
  status: 'connecting' | 'running' | 'done' | 'failed' | 'refused' | 'lost'
  job: Job | null
  progress: Progress | null
  result: JobResult | null
}

const PHASES: Record<string, string> = {
  download: 'Downloading',
  install: 'Unpacking',
  configure: 'Setting up',
  remove: 'Removing',
  purge: 'Purging',
  trigger: 'Running triggers',
  dpkg: 'Starting dpkg',
  error: 'Error',
  conffile: 'Configuration file',
}

/**
 * For a `stack` (a grid): its one column may shrink below its content's widest line (the tab row, apt's output), so
 * those scroll inside themselves instead of widening the page at phone width.
 */
export const FIT = { gridTemplateColumns: 'minmax(0, 1fr)' }

const names = (packages: string[] | undefined) => (packages?.length ? packages.join(', ') : '')

/** "Installing hostd-demo", "Upgrading every upgradable package"... */
export function jobTitle(request: Pick<ExecRequest, 'action' | 'packages'>): string {
  const list = names(request.packages)
  switch (request.action) {
    case 'install':
      return `Installing ${list}`
    case 'upgrade':
      return list ? `Upgrading ${list}` : 'Upgrading every upgradable package'
    case 'remove':
      return `Removing ${list}`
    case 'purge':
      return `Purging ${list}`
    default:
      return 'Refreshing the package lists'
  }
}

/** "install hostd-slow by admin since 10:30:00" */
export function describeJob(job: Job): string {
  const packages = job.packages.length ? ` ${names(job.packages)}` : ''
  const by = job.username ? ` by ${job.username}` : ''
  return `${job.action}${packages}${by}, started ${formatDateTime(job.startedAt)}`
}

export interface JobStore {
  state: Signal<JobState | null>
  /** apt's output of the current job, appended as it comes. */
  lines: string[]
  lineCount: Signal<number>
  /** True from the click until the result: the page disables its other actions. */
  running: ReadonlySignal<boolean>
  /** The server's id of this page's job (to tell it from someone else's in the list). */
  jobId: ReadonlySignal<string | null>
  start(request: ExecRequest, onEnd: () => void): void
  dismiss(): void
}

export function createJobStore(ctx: PageContext): JobStore {
  const state = signal<JobState | null>(null)
  const lineCount = signal(0)
  let seq = 0
  let ws: WebSocket | null = null
  const store: JobStore = {
    state,
    lines: [],
    lineCount,
    running: computed(() => state.value?.status === 'connecting' || state.value?.status === 'running'),
    jobId: computed(() => state.value?.job?.id ?? null),
    start(request, onEnd) {
      if (store.running.value) return
      ws?.close()
      store.lines = []
      lineCount.value = 0
      state.value = { seq: ++seq, request, status: 'connecting', job: null, progress: null, result: null }
      const update = (patch: Partial<JobState>) => (state.value = { ...state.value!, ...patch })
      const socket = ctx.socket('/api/packages/exec')
      ws = socket
      socket.addEventListener('open', () => socket.send(JSON.stringify(request)))
      socket.addEventListener('message', (e: MessageEvent<string>) => {
        let m: JobMessage
        try {
          m = JSON.parse(e.data)
        } catch {
          return
        }
        if (m.type === 'accepted') update({ status: 'running', job: m.job })
        else if (m.type === 'progress')
          update({ progress: { phase: m.phase, package: m.package, percent: m.percent, text: m.text } })
        else if (m.type === 'line') {
          store.lines.push(m.text)
          lineCount.value = store.lines.length
        } else if (m.type === 'result') {
          // A job that ran (exitCode) and failed may carry a translated error; one refused before it ran has no exitCode.
          update({ result: m, status: m.ok ? 'done' : m.exitCode === undefined && m.error ? 'refused' : 'failed' })
        }
      })
      socket.addEventListener('close', () => {
        if (ws === socket) ws = null
        const s = state.value!
        if (s.seq !== seq) return
        if (s.status === 'connecting') {
          update({
            status: 'refused',
            result: {
              ok: false,
              message: 'The server refused the job: your session may have ended, or you are no longer an admin.',
            },
          })
        } else if (s.status === 'running') {
          update({ status: 'lost' })
        }
        onEnd()
      })
    },
    dismiss() {
      if (!store.running.value) state.value = null
    },
  }
  return store
}

/** apt's output lines, appended to the DOM as they arrive (no re-render per line), following the end. */
function JobLog({ store, label }: { store: JobStore; label: string }) {
  const pre = useRef<HTMLPreElement>(null)
  const shown = useRef(0)
  const count = store.lineCount.value
  useEffect(() => {
    const el = pre.current!
    const atEnd = el.scrollTop + el.clientHeight >= el.scrollHeight - 8
    const fresh = store.lines.slice(shown.current, count)
    shown.current = count
    if (fresh.length === 0) return
    el.append(fresh.map((l) => `${l}\n`).join(''))
    if (atEnd) el.scrollTop = el.scrollHeight
  }, [count])
  // biome-ignore lint/a11y/noNoninteractiveTabindex: it scrolls, so a keyboard must reach it (axe scrollable-region-focusable)
  return <pre ref={pre} class="log-lines" role="log" aria-label={label} tabIndex={0} style={{ height: '14rem' }} />
}

function outcome(s: JobState) {
  const r = s.result
  switch (s.status) {
    case 'connecting':
      return <p class="muted">Starting…</p>
    case 'running':
      return null
    case 'done':
      return (
        <p>
          <Badge tone="success">Done</Badge> apt-get finished successfully; the lists below show the change.
        </p>
      )
    case 'failed':
      return r?.message ? (
        <>
          <p>
            <Badge tone="danger">Failed</Badge> {r.message}
          </p>
          {r.details?.raw && <ErrorDetails details={r.details.raw} />}
        </>
      ) : (
        <p>
          <Badge tone="danger">Failed</Badge> apt-get ended with exit code {r?.exitCode}. Its output above says why;
          nothing else was changed by this page.
        </p>
      )
    case 'lost':
      return (
        <p>
          <Badge tone="warning">Connection lost</Badge> The job goes on on the server: its outcome goes to the audit log
          and the lists update when it ends.
        </p>
      )
    default:
      return r?.error === 'HOSTD_PACKAGES_BUSY' && r.job ? (
        <p>
          <Badge tone="warning">Busy</Badge> Another package job is running: {describeJob(r.job)}. Try again when it
          ends.
        </p>
      ) : (
        <p>
          <Badge tone="danger">Not started</Badge> {r?.message}
        </p>
      )
  }
}

/** The current job: what it does, a live progress bar, apt's output and the result. */
export function JobPanel({ store }: { store: JobStore }) {
  const s = store.state.value
  if (!s) return null
  const title = jobTitle(s.request)
  const p = s.progress
  const finished = s.status === 'done'
  const bar = finished
    ? { value: 100, detail: 'Finished', tone: 'success' as const }
    : p
      ? {
          value: p.percent,
          detail: `${PHASES[p.phase] ?? p.phase}${p.package ? ` ${p.package}` : ''} · ${Math.round(p.percent)} %`,
          tone: s.status === 'failed' || p.phase === 'error' ? ('danger' as const) : ('accent' as const),
        }
      : {
          value: s.status === 'running' || s.status === 'connecting' ? undefined : 0,
          detail: s.status === 'running' ? 'Preparing' : '',
          tone: 'accent' as const,
        }
  return (
    <Card
      title={title}
      actions={
        !store.running.value && <IconButton icon="x" label="Close the job panel" onClick={() => store.dismiss()} />
      }
    >
      <div class="stack" style={FIT}>
        {s.status !== 'refused' && (
          <ProgressBar
            label={`Progress of ${title.toLowerCase()}`}
            value={bar.value}
            detail={bar.detail}
            tone={bar.tone}
          />
        )}
        {p && !finished && <p class="detail mono">{p.text}</p>}
        {s.status !== 'refused' && <JobLog key={s.seq} store={store} label={`Output of ${title.toLowerCase()}`} />}
        <div aria-live="polite">{outcome(s)}</div>
      </div>
    </Card>
  )
}
