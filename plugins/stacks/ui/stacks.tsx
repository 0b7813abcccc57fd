/**
 * The stacks page (/stacks). Its views have their own URLs under the page's base:
 *   /stacks              the stacks with the state of each service, and compose projects an admin may adopt
 *   /stacks/new          a new stack (operators)
 *   /stacks/<name>       one stack: its services, actions, the compose file and .env editors, progress, logs
 * One socket (/api/stacks/events) tells the page of operations, deploy progress and files changed on disk.
 * The editor is a textarea with line numbers; problems show under it with their lines, as the file is typed.
 */
import {
  ApiError,
  Async,
  Badge,
  Button,
  Callout,
  Card,
  DataTable,
  Empty,
  LogView,
  PageHeader,
  ProgressList,
  Tabs,
  TextField,
  adoptStyles,
  defineElement,
  useResource,
  useUniqueId,
  type PageContext,
  type ProgressItem,
  type Tone,
} from '@hostd/ui'
import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import css from './stacks.css' with { type: 'text' }

interface ServiceState {
  name: string
  container: string | null
  image: string
  state: string
  health: string | null
}
interface StackSummary {
  name: string
  state: 'running' | 'partial' | 'stopped' | 'down'
  services: ServiceState[]
  adopted: boolean
  operation: string | null
  issues: number
}
interface Adoptable {
  project: string
  workingDir: string
  configFiles: string[]
  services: ServiceState[]
}
interface Issue {
  kind: string
  path: string
  line?: number
  message: string
}
interface Validation {
  ok: boolean
  issues: Issue[]
  warnings: Issue[]
}
interface StackDetail {
  name: string
  composeFile: string
  compose: string
  env: string | null
  envKeys: string[]
  adopted: boolean
  state: StackSummary['state']
  services: ServiceState[]
  validation: Validation
  operation: string | null
  progress: StackEvent[]
}
// biome-ignore lint/suspicious/noExplicitAny: socket messages are read field by field
type StackEvent = any

const STATE_TONE: Record<string, Tone> = {
  running: 'success',
  partial: 'warning',
  stopped: 'neutral',
  down: 'neutral',
  exited: 'neutral',
  absent: 'neutral',
  created: 'neutral',
}

function ServiceBadges({ services }: { services: ServiceState[] }) {
  if (services.length === 0) return <span class="muted">No services</span>
  return (
    <ul class="service-badges" aria-label="Services">
      {services.map((s) => (
        <li key={s.name}>
          <Badge tone={s.health === 'unhealthy' ? 'danger' : (STATE_TONE[s.state] ?? 'neutral')}>
            {s.name}: {s.state}
            {s.health ? ` (${s.health})` : ''}
          </Badge>
        </li>
      ))}
    </ul>
  )
}

/** Subscribes to the events socket while the page lives; `onEvent` sees every message. */
function useEvents(ctx: PageContext, onEvent: (e: StackEvent) => void) {
  const handler = useRef(onEvent)
  handler.current = onEvent
  useEffect(() => {
    const ws = ctx.socket('/api/stacks/events')
    ws.onmessage = (m) => handler.current(JSON.parse(String(m.data)))
    return () => ws.close()
  }, [])
}

function StackList({ ctx }: { ctx: PageContext }) {
  const list = useResource(
    (signal) => ctx.api.get<{ stacks: StackSummary[]; adoptable: Adoptable[] }>('/api/stacks', { signal }),
    [],
  )
  useEvents(ctx, (e) => {
    if (e.type === 'changed' || e.type === 'operation') list.reload()
  })
  const [adopting, setAdopting] = useState<string | null>(null)
  const adopt = async (project: string) => {
    setAdopting(project)
    try {
      await ctx.api.post('/api/stacks/adopt', { project })
      ctx.toast.success(`Adopted ${project}`)
      list.reload()
    } catch (err) {
      ctx.toast.error((err as Error).message)
    } finally {
      setAdopting(null)
    }
  }
  return (
    <>
      <PageHeader
        title="Stacks"
        description="Multi-container apps from compose files kept on disk, one folder each. Services that reach the host need an admin."
        actions={
          ctx.can('operator') ? (
            <Button variant="primary" icon="plus" onClick={() => ctx.navigate(`${ctx.base}/new`)}>
              New stack
            </Button>
          ) : undefined
        }
      />
      <Async resource={list} label="Loading stacks…">
        {(data) => (
          <div class="stack">
            {data.stacks.length === 0 ? (
              <Empty icon="layout-grid" title="No stacks yet">
                A stack is a folder with a compose.yaml and an optional .env. Create one here, or put a folder in the
                stacks folder.
              </Empty>
            ) : (
              <DataTable
                caption="Stacks"
                hideCaption
                rowKey={(s) => s.name}
                rows={data.stacks}
                columns={[
                  {
                    key: 'name',
                    label: 'Stack',
                    sortable: true,
                    render: (s) => (
                      <a class="cell-strong" href={`${ctx.base}/${encodeURIComponent(s.name)}`}>
                        {s.name}
                      </a>
                    ),
                  },
                  {
                    key: 'state',
                    label: 'State',
                    sortable: true,
                    render: (s) => (
                      <span class="state-cell">
                        <Badge tone={STATE_TONE[s.state] ?? 'neutral'}>{s.state}</Badge>
                        {s.adopted && <Badge tone="neutral">adopted</Badge>}
                        {s.operation && <Badge tone="accent">{s.operation}…</Badge>}
                        {s.issues > 0 && <Badge tone="danger">{s.issues} problem(s) in its file</Badge>}
                      </span>
                    ),
                  },
                  { key: 'services', label: 'Services', render: (s) => <ServiceBadges services={s.services} /> },
                ]}
              />
            )}
            {data.adoptable.length > 0 && (
              <Card title="Compose projects made elsewhere">
                <p class="muted">
                  These run on the engine but have no stack here (the compose CLI made them). An admin may adopt one:
                  its folder becomes the stack's.
                </p>
                <DataTable
                  caption="Adoptable projects"
                  hideCaption
                  rowKey={(a) => a.project}
                  rows={data.adoptable}
                  columns={[
                    { key: 'project', label: 'Project' },
                    { key: 'workingDir', label: 'Folder', secondary: true },
                    { key: 'services', label: 'Services', render: (a) => <ServiceBadges services={a.services} /> },
                    {
                      key: 'actions',
                      label: 'Actions',
                      align: 'end',
                      render: (a) =>
                        ctx.can('admin') ? (
                          <Button
                            size="sm"
                            busy={adopting === a.project}
                            aria-label={`Adopt ${a.project}`}
                            onClick={() => adopt(a.project)}
                          >
                            Adopt
                          </Button>
                        ) : (
                          <span class="muted">An admin may adopt it</span>
                        ),
                    },
                  ]}
                />
              </Card>
            )}
          </div>
        )}
      </Async>
    </>
  )
}

/** A textarea with line numbers; `marks` are the lines with problems (shown in the gutter). */
function CodeEditor({
  label,
  value,
  onInput,
  readOnly,
  marks,
  focusLine,
  minRows = 12,
}: {
  minRows?: number
  label: string
  value: string
  onInput: (v: string) => void
  readOnly: boolean
  marks: Set<number>
  focusLine?: { line: number; n: number } | null
}) {
  const id = useUniqueId()
  const area = useRef<HTMLTextAreaElement>(null)
  const gutter = useRef<HTMLDivElement>(null)
  const count = value.split('\n').length
  useEffect(() => {
    if (!focusLine || !area.current) return
    const lines = value.split('\n')
    const start = lines.slice(0, focusLine.line - 1).reduce((n, l) => n + l.length + 1, 0)
    area.current.focus()
    area.current.setSelectionRange(start, start + (lines[focusLine.line - 1]?.length ?? 0))
  }, [focusLine])
  return (
    <div class="code-field">
      <label class="code-label" for={id}>
        {label}
      </label>
      <div class="code-editor">
        <div class="code-gutter" aria-hidden="true" ref={gutter}>
          {Array.from({ length: count }, (_, i) => (
            <span key={i} class={marks.has(i + 1) ? 'marked' : undefined}>
              {i + 1}
            </span>
          ))}
        </div>
        <textarea
          id={id}
          ref={area}
          spellcheck={false}
          readOnly={readOnly}
          value={value}
          onInput={(e) => onInput((e.target as HTMLTextAreaElement).value)}
          onScroll={(e) => {
            if (gutter.current) gutter.current.scrollTop = (e.target as HTMLTextAreaElement).scrollTop
          }}
          rows={Math.min(Math.max(count + 1, minRows), 40)}
        />
      </div>
    </div>
  )
}

function Problems({ validation, onLine }: { validation: Validation | null; onLine: (line: number) => void }) {
  if (!validation) return null
  if (validation.ok && validation.warnings.length === 0)
    return (
      <p class="validation-ok" role="status">
        The file is valid.
      </p>
    )
  const item = (i: Issue, n: number) => (
    <li key={n}>
      {i.line ? (
        <button type="button" class="link-button" onClick={() => onLine(i.line!)}>
          Line {i.line}
        </button>
      ) : null}{' '}
      {i.message}
    </li>
  )
  return (
    <div class="problems">
      {validation.issues.length > 0 && (
        <>
          <h3 id="stack-problems">Problems</h3>
          <ul aria-labelledby="stack-problems">{validation.issues.map(item)}</ul>
        </>
      )}
      {validation.warnings.length > 0 && (
        <>
          <h3 id="stack-warnings">Warnings</h3>
          <ul aria-labelledby="stack-warnings">{validation.warnings.map(item)}</ul>
        </>
      )}
    </div>
  )
}

/** The compose file and .env with live validation (operators) and Save. */
function Editor({
  ctx,
  name,
  detail,
  onSaved,
  isNew,
}: {
  ctx: PageContext
  name: string
  detail: StackDetail | null
  onSaved: (name: string) => void
  isNew: boolean
}) {
  const canEdit = ctx.can('operator')
  const [stackName, setStackName] = useState(name)
  const [compose, setCompose] = useState(detail?.compose ?? 'services:\n  web:\n    image: \n')
  const [env, setEnv] = useState(detail?.env ?? '')
  const [validation, setValidation] = useState<Validation | null>(detail?.validation ?? null)
  const [focus, setFocus] = useState<{ line: number; n: number } | null>(null)
  const [saving, setSaving] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const dirty = isNew || compose !== detail?.compose || (detail?.env !== null && env !== detail?.env)
  useEffect(() => {
    if (!canEdit || !/^[a-z0-9][a-z0-9_-]{0,62}$/.test(stackName)) return
    const timer = setTimeout(() => {
      ctx.api
        .post<Validation>('/api/stacks/validate', { name: stackName, compose, env })
        .then(setValidation, () => undefined)
    }, 400)
    return () => clearTimeout(timer)
  }, [compose, env, stackName])
  const marks = useMemo(
    () => new Set((validation?.issues ?? []).flatMap((i) => (i.line && i.kind !== 'env' ? [i.line] : []))),
    [validation],
  )
  const envMarks = useMemo(
    () => new Set((validation?.issues ?? []).flatMap((i) => (i.line && i.kind === 'env' ? [i.line] : []))),
    [validation],
  )
  const save = async () => {
    setSaving(true)
    setError(null)
    try {
      if (isNew) await ctx.api.post('/api/stacks', { name: stackName, compose, env })
      else
        await ctx.api.post(`/api/stacks/${name}/files`, {
          compose,
          ...(detail?.env !== null ? { env } : {}),
        })
      ctx.toast.success(isNew ? `Stack ${stackName} created` : 'Saved')
      onSaved(stackName)
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err))
    } finally {
      setSaving(false)
    }
  }
  return (
    <div class="stack">
      {isNew && (
        <TextField
          label="Stack name"
          name="name"
          value={stackName}
          onInput={(e: Event) => setStackName((e.target as HTMLInputElement).value)}
          hint="Lowercase letters, digits, _ and -: the compose project's name and its folder's."
        />
      )}
      <CodeEditor
        label={`Compose file (${detail?.composeFile ?? 'compose.yaml'})`}
        value={compose}
        onInput={setCompose}
        readOnly={!canEdit}
        marks={marks}
        focusLine={focus}
      />
      <Problems validation={validation} onLine={(line) => setFocus({ line, n: Date.now() })} />
      {detail?.env === null ? (
        <p class="muted">
          Its .env sets {detail.envKeys.length ? detail.envKeys.join(', ') : 'nothing'} (values are shown to operators).
        </p>
      ) : (
        <CodeEditor
          label="Environment file (.env)"
          value={env}
          onInput={setEnv}
          readOnly={!canEdit}
          marks={envMarks}
          minRows={4}
        />
      )}
      {error && <Callout title="Not saved">{error}</Callout>}
      {canEdit && (
        <div class="actions">
          <Button variant="primary" icon="check" busy={saving} disabled={!dirty} onClick={save}>
            {isNew ? 'Create stack' : 'Save'}
          </Button>
        </div>
      )}
    </div>
  )
}

function progressItems(events: StackEvent[]): ProgressItem[] {
  const items = new Map<string, ProgressItem>()
  for (const e of events) {
    if (e.type !== 'progress') continue
    const p = e.event
    if (p.type === 'service') {
      const state =
        p.step === 'failed'
          ? 'failed'
          : ['started', 'healthy', 'up-to-date', 'removed', 'stopped', 'restarted'].includes(p.step)
            ? 'done'
            : 'running'
      items.set(`svc:${p.service}`, {
        id: `svc:${p.service}`,
        label: p.service,
        status: p.message ? `${p.step}: ${p.message}` : p.step,
        state,
      })
    } else if (p.type === 'pull' && p.layer && !/^(Pulling from|Digest:|Status:)/.test(p.status)) {
      const id = `pull:${p.image}:${p.layer}`
      const done = /complete|already exists/i.test(p.status)
      items.set(id, {
        id,
        label: `${p.service}: layer ${p.layer}`,
        status: p.status,
        current: p.current,
        total: p.total,
        state: done ? 'done' : 'running',
      })
    } else if (p.type === 'network' || p.type === 'volume') {
      items.set(`${p.type}:${p.name}`, {
        id: `${p.type}:${p.name}`,
        label: `${p.type} ${p.name}`,
        status: p.created ? 'created' : 'exists',
        state: 'done',
      })
    }
  }
  return [...items.values()]
}

function StackView({ ctx, name }: { ctx: PageContext; name: string }) {
  const detail = useResource((signal) => ctx.api.get<StackDetail>(`/api/stacks/${name}`, { signal }), [name])
  const [events, setEvents] = useState<StackEvent[] | null>(null)
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null)
  const [busy, setBusy] = useState<string | null>(null)
  const [tab, setTab] = useState('compose')
  const [changedOnDisk, setChangedOnDisk] = useState(false)
  useEvents(ctx, (e) => {
    if (e.stack !== name) return
    if (e.type === 'changed') setChangedOnDisk(true)
    if (e.type === 'operation' && e.state === 'started') setEvents([e])
    else if (e.type === 'operation' || e.type === 'progress') setEvents((list) => [...(list ?? []), e])
    if (e.type === 'operation' && e.state !== 'started') detail.reload()
  })
  const run = async (label: string, path: string, body: unknown = {}, confirmText?: string) => {
    if (
      confirmText &&
      !(await ctx.confirm({ title: `${label} ${name}?`, message: confirmText, confirmLabel: label, danger: true }))
    )
      return
    setBusy(label)
    setOutcome(null)
    setTab('progress')
    try {
      await ctx.api.post(path, body)
      setOutcome({ ok: true, text: `${label}: done` })
    } catch (err) {
      setOutcome({ ok: false, text: (err as Error).message })
    } finally {
      setBusy(null)
      detail.reload()
    }
  }
  return (
    <Async resource={detail} label="Loading the stack…">
      {(d) => {
        const shown = events ?? d.progress
        const operator = ctx.can('operator')
        return (
          <>
            <PageHeader
              title={`Stack ${d.name}`}
              description={`${d.adopted ? 'Adopted from the compose CLI. ' : ''}State: ${d.state}.`}
              actions={
                operator ? (
                  <div class="actions">
                    <Button
                      variant="primary"
                      icon="play"
                      busy={busy === 'Deploy'}
                      disabled={!!busy || !d.validation.ok}
                      onClick={() => run('Deploy', `/api/stacks/${name}/deploy`)}
                    >
                      Deploy
                    </Button>
                    <Button
                      icon="download"
                      busy={busy === 'Update'}
                      disabled={!!busy || !d.validation.ok}
                      onClick={() => run('Update', `/api/stacks/${name}/update`)}
                    >
                      Update
                    </Button>
                    <Button
                      icon="rotate-ccw"
                      busy={busy === 'Restart'}
                      disabled={!!busy}
                      onClick={() => run('Restart', `/api/stacks/${name}/restart`)}
                    >
                      Restart
                    </Button>
                    <Button
                      icon="square"
                      busy={busy === 'Stop'}
                      disabled={!!busy}
                      onClick={() => run('Stop', `/api/stacks/${name}/stop`)}
                    >
                      Stop
                    </Button>
                    <Button
                      variant="danger"
                      icon="power"
                      busy={busy === 'Take down'}
                      disabled={!!busy}
                      onClick={() =>
                        run(
                          'Take down',
                          `/api/stacks/${name}/down`,
                          {},
                          'Its containers and networks are removed; its volumes are kept.',
                        )
                      }
                    >
                      Take down
                    </Button>
                  </div>
                ) : undefined
              }
            />
            <div class="stack">
              {changedOnDisk && (
                <Callout
                  tone="warning"
                  title="The files changed on disk"
                  action={
                    <Button
                      size="sm"
                      onClick={() => {
                        setChangedOnDisk(false)
                        detail.reload()
                      }}
                    >
                      Load them
                    </Button>
                  }
                >
                  Someone edited this stack's folder outside this page.
                </Callout>
              )}
              {outcome && (
                <Callout tone={outcome.ok ? 'neutral' : 'danger'} title={outcome.ok ? 'Done' : 'It failed'}>
                  {outcome.text}
                </Callout>
              )}
              <DataTable
                caption="Services"
                rowKey={(s) => s.name}
                rows={d.services}
                empty={
                  <Empty icon="box" title="No services">
                    The file declares none, or it is not valid.
                  </Empty>
                }
                columns={[
                  { key: 'name', label: 'Service' },
                  {
                    key: 'state',
                    label: 'State',
                    render: (s) => (
                      <span class="state-cell">
                        <Badge tone={STATE_TONE[s.state] ?? 'neutral'}>{s.state}</Badge>
                        {s.health && (
                          <Badge
                            tone={s.health === 'healthy' ? 'success' : s.health === 'unhealthy' ? 'danger' : 'warning'}
                          >
                            {s.health}
                          </Badge>
                        )}
                      </span>
                    ),
                  },
                  { key: 'container', label: 'Container', secondary: true, render: (s) => s.container ?? '—' },
                  {
                    key: 'actions',
                    label: 'Actions',
                    align: 'end',
                    render: (s) =>
                      operator && s.container ? (
                        <span class="actions">
                          {(['start', 'stop', 'restart'] as const).map((a) => (
                            <Button
                              key={a}
                              size="sm"
                              variant="ghost"
                              disabled={!!busy}
                              aria-label={`${a} ${s.name}`}
                              onClick={() => run(`${a} ${s.name}`, `/api/stacks/${name}/services/${s.name}/${a}`)}
                            >
                              {a}
                            </Button>
                          ))}
                        </span>
                      ) : null,
                  },
                ]}
              />
              <Tabs
                label="Stack views"
                tabs={[
                  { id: 'compose', label: 'Files' },
                  { id: 'progress', label: 'Progress' },
                  { id: 'logs', label: 'Logs' },
                ]}
                selected={tab}
                onSelect={setTab}
              >
                {tab === 'compose' ? (
                  <Editor
                    key={d.compose + (d.env ?? '')}
                    ctx={ctx}
                    name={name}
                    detail={d}
                    isNew={false}
                    onSaved={() => detail.reload()}
                  />
                ) : tab === 'progress' ? (
                  shown.length ? (
                    <ProgressList label="Deploy progress" items={progressItems(shown)} />
                  ) : (
                    <Empty icon="activity" title="Nothing running">
                      Progress shows here while a deploy or an update runs.
                    </Empty>
                  )
                ) : d.services.some((s) => s.container) ? (
                  <LogView
                    label={`Logs of ${name}`}
                    open={() => ctx.socket(`/api/stacks/logs?name=${encodeURIComponent(name)}&tail=200`)}
                    decode={(data) => {
                      const m = JSON.parse(String(data))
                      return m.type === 'log' ? `${m.service.padEnd(10)} | ${m.line}\n` : ''
                    }}
                  />
                ) : (
                  <Empty icon="scroll-text" title="No containers">
                    Deploy the stack to see its logs.
                  </Empty>
                )}
              </Tabs>
            </div>
          </>
        )
      }}
    </Async>
  )
}

function StacksPage({ ctx }: { ctx: PageContext }) {
  const parts = ctx.location.value.path.slice(ctx.base.length).split('/').filter(Boolean).map(decodeURIComponent)
  if (parts[0] === 'new')
    return (
      <>
        <PageHeader title="New stack" description="A compose file and its .env, checked as you type." />
        {ctx.can('operator') ? (
          <Editor ctx={ctx} name="" detail={null} isNew onSaved={(n) => ctx.navigate(`${ctx.base}/${n}`)} />
        ) : (
          <Empty icon="lock" title="Operators create stacks">
            Your role may read stacks only.
          </Empty>
        )}
      </>
    )
  if (parts[0]) return <StackView key={parts[0]} ctx={ctx} name={parts[0]} />
  return <StackList ctx={ctx} />
}

adoptStyles('stacks', css)
defineElement('stacks-page', StacksPage)
