/**
 * The widgets on the overview (one card, `widgets-board`): each widget's cached output drawn by its type, when it
 * ran and how it ended; "Run now" for operators; admins add, edit and delete widgets in place. Scripts reach
 * admins only (the API leaves the key out for everyone else). The output conventions per type are in the README.
 */
import { useState } from 'preact/hooks'
import {
  ApiError,
  Badge,
  Button,
  Dialog,
  Empty,
  ErrorState,
  FieldErrors,
  Form,
  Icon,
  IconButton,
  Loading,
  ProgressBar,
  Select,
  StaleNotice,
  TextArea,
  TextField,
  adoptStyles,
  defineElement,
  formatDateTime,
  formatRelative,
  useResource,
  useUniqueId,
  type PageContext,
} from '@hostd/ui'
import type { Output, RunnerStatus, WidgetView } from '../src/schemas.ts'
import { LIMITS } from '../src/limits.ts'
import css from './widgets.css' with { type: 'text' }

type Widget = WidgetView
type WidgetType = Widget['type']
interface WidgetList {
  items: Widget[]
  runner: RunnerStatus
}

const TYPES: { value: WidgetType; label: string; hint: string }[] = [
  { value: 'text', label: 'Text', hint: 'Shows what the script prints, as it is.' },
  { value: 'stat', label: 'Stat', hint: 'A big value: the first line printed. A second line, if any, is its label.' },
  { value: 'list', label: 'List', hint: 'One item per line. A tab splits a line into a name and a value.' },
  {
    value: 'progress',
    label: 'Progress',
    hint: 'A bar: the first number from 0 to 100 on the first line (a % is fine). A second line, if any, is its label.',
  },
]

/** Non-empty lines, trimmed at the end. */
const linesOf = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() !== '')

/** The output drawn by the widget's type. Bad output never breaks the card: it says what it expected. */
function Drawn({ widget, output }: { widget: Widget; output: Output }) {
  const lines = linesOf(output.stdout)
  if (lines.length === 0)
    return output.error || output.timedOut ? null : <p class="muted widget-nothing">The script printed nothing.</p>
  switch (widget.type) {
    case 'stat':
      return (
        <p class="widget-stat">
          <span class="widget-stat-value">{lines[0]!.trim()}</span>
          {lines[1] && <span class="widget-stat-label">{lines[1].trim()}</span>}
        </p>
      )
    case 'list':
      return (
        <ul class="widget-list">
          {lines.map((line, i) => {
            const [name, ...rest] = line.split('\t')
            return (
              <li key={i}>
                <span>{name!.trim()}</span>
                {rest.length > 0 && <span class="widget-list-value">{rest.join(' ').trim()}</span>}
              </li>
            )
          })}
        </ul>
      )
    case 'progress': {
      const match = /-?\d+(?:\.\d+)?/.exec(lines[0]!)
      const value = match ? Number(match[0]) : NaN
      if (!Number.isFinite(value) || value < 0 || value > 100) {
        return (
          <p class="widget-warning">
            <Icon name="triangle-alert" size={16} /> Expected a number from 0 to 100 on the first line, got “
            {lines[0]!.slice(0, 60)}”.
          </p>
        )
      }
      const label = lines[1]?.trim() || widget.title
      return (
        <ProgressBar
          label={label}
          value={value}
          max={100}
          detail={`${Number.isInteger(value) ? value : value.toFixed(1)} %`}
          tone={value >= 90 ? 'danger' : value >= 75 ? 'warning' : 'accent'}
        />
      )
    }
    default:
      return (
        // biome-ignore lint/a11y/noNoninteractiveTabindex lint/a11y/useSemanticElements: scrolling text, so a keyboard must reach it; named as a region
        <pre class="widget-text" role="region" tabIndex={0} aria-label={`Output of ${widget.title}`}>
          {output.stdout.replace(/\n+$/, '')}
        </pre>
      )
  }
}

/** How the last run ended, when it was not plainly fine. */
function RunProblems({ widget, output }: { widget: Widget; output: Output }) {
  return (
    <>
      {output.error && (
        <p class="widget-problem" role="note">
          <Badge tone="danger">Could not run</Badge> <span>{output.error}</span>
        </p>
      )}
      {output.timedOut && (
        <p class="widget-problem">
          <Badge tone="danger">Timed out</Badge>{' '}
          <span>Stopped after {widget.timeoutSeconds} s, with everything it started.</span>
        </p>
      )}
      {output.truncated && (
        <p class="widget-problem">
          <Badge tone="warning">Output cut</Badge>{' '}
          <span>It printed more than 64 KiB: the rest was dropped and the script stopped.</span>
        </p>
      )}
      {!output.error && !output.timedOut && !output.truncated && output.exitCode !== null && output.exitCode !== 0 && (
        <p class="widget-problem">
          <Badge tone="warning">Exit code {output.exitCode}</Badge> <span>The script reported a failure.</span>
        </p>
      )}
      {output.stderr.trim() && (
        <details class="widget-stderr">
          <summary>Error output</summary>
          <pre>{output.stderr.replace(/\n+$/, '')}</pre>
        </details>
      )}
    </>
  )
}

interface TileProps {
  ctx: PageContext
  widget: Widget
  runner: RunnerStatus
  onRun: () => Promise<void>
  onEdit: () => void
  onDelete: () => void
}

function Tile({ ctx, widget, runner, onRun, onEdit, onDelete }: TileProps) {
  const titleId = useUniqueId()
  const [running, setRunning] = useState(false)
  const output = widget.output
  const busy = running || widget.running
  return (
    <li class={`widget-tile widget-type-${widget.type}`} aria-labelledby={titleId}>
      <header class="widget-head">
        <h3 id={titleId}>{widget.title}</h3>
        <div class="widget-actions">
          {ctx.can('operator') && (
            <IconButton
              icon="play"
              size="sm"
              label={`Run ${widget.title} now`}
              busy={busy}
              disabled={!runner.available}
              onClick={async () => {
                setRunning(true)
                try {
                  await onRun()
                } finally {
                  setRunning(false)
                }
              }}
            />
          )}
          {ctx.can('admin') && (
            <>
              <IconButton icon="pencil" size="sm" label={`Edit ${widget.title}`} onClick={onEdit} />
              <IconButton icon="trash" size="sm" label={`Delete ${widget.title}`} onClick={onDelete} />
            </>
          )}
        </div>
      </header>
      <div class="widget-body" aria-busy={busy || undefined}>
        {output ? (
          <>
            <Drawn widget={widget} output={output} />
            <RunProblems widget={widget} output={output} />
          </>
        ) : busy ? (
          <p class="muted widget-nothing">
            <span class="spinner" aria-hidden="true" /> Running for the first time…
          </p>
        ) : (
          <p class="muted widget-nothing">
            Not run yet{runner.available ? '' : ': scripts cannot run on this server'}.
          </p>
        )}
      </div>
      <footer class="widget-meta">
        {busy ? (
          <span role="status">
            <span class="spinner" aria-hidden="true" /> Running…
          </span>
        ) : output ? (
          <span>
            Ran{' '}
            <time dateTime={output.ranAt} title={formatDateTime(output.ranAt)}>
              {formatRelative(output.ranAt)}
            </time>{' '}
            · took {output.durationMs < 1000 ? `${output.durationMs} ms` : `${(output.durationMs / 1000).toFixed(1)} s`}
          </span>
        ) : null}
        <span>every {every(widget.refreshSeconds)}</span>
      </footer>
      {widget.script !== undefined && (
        <details class="widget-script">
          <summary>Script</summary>
          <pre>{widget.script}</pre>
        </details>
      )}
    </li>
  )
}

function every(seconds: number): string {
  if (seconds % 3600 === 0) return seconds === 3600 ? 'hour' : `${seconds / 3600} h`
  if (seconds % 60 === 0) return seconds === 60 ? 'minute' : `${seconds / 60} min`
  return `${seconds} s`
}

/** A 400 from the schema names the property ("body/script must …"): show it at that field. */
function atField(err: unknown): unknown {
  if (!(err instanceof ApiError)) return err
  const property = /body\/(title|type|script|refreshSeconds|timeoutSeconds)\b/.exec(err.message)?.[1]
  return property ? new FieldErrors({ [property]: err.message }) : err
}

function Editor({
  ctx,
  widget,
  onClose,
  onSaved,
}: {
  ctx: PageContext
  widget: Widget | null
  onClose: () => void
  onSaved: () => void
}) {
  const [type, setType] = useState<WidgetType>(widget?.type ?? 'text')
  const hint = TYPES.find((t) => t.value === type)!.hint
  return (
    <Dialog open size="lg" title={widget ? `Edit ${widget.title}` : 'Add a widget'} onClose={onClose}>
      <Form
        submitLabel={widget ? 'Save widget' : 'Add widget'}
        actions={<Button onClick={onClose}>Cancel</Button>}
        onSubmit={async (v) => {
          const body = {
            title: String(v.title).trim(),
            type,
            script: String(v.script),
            refreshSeconds: Number(v.refreshSeconds),
            timeoutSeconds: Number(v.timeoutSeconds),
          }
          try {
            if (widget) await ctx.api.post(`/api/bento/widgets/${widget.id}/update`, body)
            else await ctx.api.post('/api/bento/widgets', body)
          } catch (err) {
            throw atField(err)
          }
          ctx.toast.success(
            widget ? `${body.title} was saved` : `${body.title} was added: it runs within a few seconds`,
          )
          onSaved()
        }}
      >
        <TextField
          name="title"
          label="Title"
          required
          maxLength={LIMITS.title}
          defaultValue={widget?.title ?? ''}
          autoComplete="off"
        />
        <Select
          name="type"
          label="Shows the output as"
          value={type}
          onChange={(e) => setType(e.currentTarget.value as WidgetType)}
          options={TYPES.map((t) => ({ value: t.value, label: t.label }))}
          hint={hint}
        />
        <TextArea
          name="script"
          label="Script"
          required
          maxLength={LIMITS.script}
          rows={8}
          spellcheck={false}
          autoCapitalize="off"
          autoComplete="off"
          defaultValue={widget?.script ?? ''}
          placeholder={'df -h / | tail -1'}
          hint={
            'Run by /bin/sh as the unprivileged widget account, in its own folder, with stdin closed. ' +
            'What it prints (at most 64 KiB) is what everyone sees; only admins see the script.'
          }
        />
        <div class="widget-timing">
          <TextField
            name="refreshSeconds"
            label="Runs every (seconds)"
            type="number"
            inputMode="numeric"
            required
            step={1}
            min={LIMITS.refreshSeconds.min}
            max={LIMITS.refreshSeconds.max}
            defaultValue={String(widget?.refreshSeconds ?? LIMITS.refreshSeconds.default)}
            hint="10 to 86400"
          />
          <TextField
            name="timeoutSeconds"
            label="Timeout (seconds)"
            type="number"
            inputMode="numeric"
            required
            step={1}
            min={LIMITS.timeoutSeconds.min}
            max={LIMITS.timeoutSeconds.max}
            defaultValue={String(widget?.timeoutSeconds ?? LIMITS.timeoutSeconds.default)}
            hint="1 to 120; then it is stopped"
          />
        </div>
      </Form>
    </Dialog>
  )
}

function RunnerNotice({ ctx, runner }: { ctx: PageContext; runner: RunnerStatus }) {
  if (runner.available) return null
  return (
    <div class="notice widget-runner" role="note">
      <Icon name="triangle-alert" />
      <div>
        <p>
          <strong>Widget scripts are not running.</strong> {runner.reason}
        </p>
        {ctx.can('admin') && (
          <p class="widget-runner-help">
            For example, as root: <code>useradd --system --shell /usr/sbin/nologin hostd-widgets</code>, then start
            hostd with <code>HOSTD_WIDGETS_USER=hostd-widgets</code>. Scripts never run as root or as hostd's own
            account.
          </p>
        )}
      </div>
    </div>
  )
}

type Editing = { widget: Widget | null } | null

function WidgetsBoard({ ctx }: { ctx: PageContext }) {
  // The list answers from the cached outputs, so polling is cheap: quicker while a run is on its way.
  const list = useResource((signal) => ctx.api.get<WidgetList>('/api/bento/widgets', { signal }), [], {
    every: (d) => (d?.items.some((w) => w.running || (!w.output && d.runner.available)) ? 2000 : 15_000),
  })
  const [editing, setEditing] = useState<Editing>(null)
  const data = list.data

  if (!data)
    return list.error !== undefined ? (
      <ErrorState error={list.error} onRetry={list.reload} />
    ) : (
      <Loading label="Loading the widgets…" />
    )
  const admin = ctx.can('admin')

  const run = async (w: Widget) => {
    try {
      const fresh = await ctx.api.post<Widget>(`/api/bento/widgets/${w.id}/run`)
      if (fresh.output?.error || fresh.output?.timedOut)
        ctx.toast.error(`${w.title}: ${fresh.output.error ?? 'timed out'}`)
      list.reload()
    } catch (err) {
      ctx.toast.error(err)
    }
  }
  const remove = async (w: Widget) => {
    const ok = await ctx.confirm({
      title: `Delete ${w.title}?`,
      message: 'The widget, its script and its last output are deleted.',
      confirmLabel: 'Delete widget',
      danger: true,
    })
    if (!ok) return
    try {
      await ctx.api.post(`/api/bento/widgets/${w.id}/delete`)
      ctx.toast.success(`${w.title} was deleted`)
      list.reload()
    } catch (err) {
      ctx.toast.error(err)
    }
  }

  return (
    <div class="widgets-board stack">
      {list.stale && <StaleNotice resource={list} />}
      <RunnerNotice ctx={ctx} runner={data.runner} />
      {data.items.length === 0 ? (
        <Empty
          icon="layout-grid"
          title="No widgets yet"
          action={
            admin ? (
              <Button variant="primary" icon="plus" onClick={() => setEditing({ widget: null })}>
                Add widget
              </Button>
            ) : undefined
          }
        >
          {admin
            ? 'A widget shows what a small script prints (disk space, a backup’s age, a service’s state), refreshed on a schedule.'
            : 'An admin can add widgets that show what small scripts print.'}
        </Empty>
      ) : (
        <>
          {admin && (
            <div class="widgets-toolbar">
              <Button size="sm" icon="plus" onClick={() => setEditing({ widget: null })}>
                Add widget
              </Button>
            </div>
          )}
          <ul class="widget-grid" aria-label="Widgets">
            {data.items.map((w) => (
              <Tile
                key={w.id}
                ctx={ctx}
                widget={w}
                runner={data.runner}
                onRun={() => run(w)}
                onEdit={() => setEditing({ widget: w })}
                onDelete={() => void remove(w)}
              />
            ))}
          </ul>
        </>
      )}
      {editing && (
        <Editor
          ctx={ctx}
          widget={editing.widget}
          onClose={() => setEditing(null)}
          onSaved={() => {
            setEditing(null)
            list.reload()
          }}
        />
      )}
    </div>
  )
}

adoptStyles('widgets', css)
defineElement('widgets-board', WidgetsBoard)
