/**
 * Installing an app: a form built from its typed fields, sent over the install socket, whose pull and create
 * messages show as progress; the server's refusals come back to the field they concern.
 */
import { useState } from 'preact/hooks'
import {
  ApiError,
  Card,
  Checkbox,
  FieldErrors,
  Form,
  Icon,
  PageHeader,
  ProgressList,
  Select,
  TextField,
  type FormValues,
  type PageContext,
  type ProgressItem,
} from '@hostd/ui'
import { installBlock } from './detail.tsx'
import { appPath, containerPath, type Catalog, type CatalogApp, type Field } from './model.ts'

interface InstallResult {
  containerId: string
  name: string
  appId: string
  source: string
  version: string
}

type Message =
  | { type: 'accepted' }
  | { type: 'pull-start'; image: string }
  | { type: 'pull'; status: string; id?: string; current?: number; total?: number }
  | { type: 'created'; containerId: string }
  | ({ type: 'result' } & (({ ok: true } & InstallResult) | { ok: false; error: string; message: string }))

/** The install's stages, in order; `stage` is the one running. */
const STAGES = ['Checking the settings', 'Downloading the image', 'Creating and starting the container'] as const

interface Progress {
  stage: number
  /** What the server said last (Docker's pull lines). */
  step: string
  /** The image was already on this server. */
  noPull: boolean
  layers: ProgressItem[]
}

/** The form's name of an app field (prefixed: an app may have a field called "name"). */
const inputName = (f: Field) => `field.${f.key}`
const CONTAINER_NAME = 'containerName'

/** Docker's per-layer statuses; other pull lines ("Pulling from …", "Digest: …") describe the whole pull. */
const LAYER_STATUS =
  /^(Pulling fs layer|Waiting|Downloading|Verifying Checksum|Download complete|Extracting|Pull complete|Already exists|Retrying)/

function FieldInput({ field }: { field: Field }) {
  const name = inputName(field)
  const label = field.required ? field.label : `${field.label} (optional)`
  const hint = field.description
  const def = field.default
  switch (field.type) {
    case 'boolean':
      return <Checkbox name={name} label={field.label} hint={hint} defaultChecked={def === true} />
    case 'select': {
      const options = (field.options ?? []).map((o) => ({ value: o.value, label: o.label ?? o.value }))
      return (
        <Select
          name={name}
          label={label}
          hint={hint}
          required={field.required}
          defaultValue={def === undefined ? (field.required ? options[0]?.value : '') : String(def)}
          options={field.required ? options : [{ value: '', label: 'Not set' }, ...options]}
        />
      )
    }
    case 'number':
    case 'port':
      return (
        <TextField
          name={name}
          label={label}
          hint={hint ?? (field.type === 'port' ? 'A free port on this server, 1 to 65535.' : undefined)}
          type="number"
          inputMode="numeric"
          required={field.required}
          min={field.type === 'port' ? 1 : field.min}
          max={field.type === 'port' ? 65535 : field.max}
          step={field.type === 'port' ? 1 : 'any'}
          defaultValue={def === undefined ? '' : String(def)}
        />
      )
    case 'path':
      return (
        <TextField
          name={name}
          label={label}
          hint={hint ?? 'An absolute folder on this server, such as /srv/media.'}
          required={field.required}
          pattern="/.*"
          placeholder="/srv/…"
          defaultValue={def === undefined ? '' : String(def)}
          autoComplete="off"
          spellcheck={false}
        />
      )
    default:
      return (
        <TextField
          name={name}
          label={label}
          hint={hint}
          type={field.type === 'password' ? 'password' : 'text'}
          autoComplete={field.type === 'password' ? 'new-password' : 'off'}
          required={field.required}
          pattern={field.pattern}
          maxLength={1024}
          defaultValue={def === undefined ? '' : String(def)}
        />
      )
  }
}

/** Form values to the request's `values`: numbers as numbers, booleans as booleans, empty fields left out. */
function requestValues(fields: Field[], values: FormValues): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {}
  for (const f of fields) {
    const v = values[inputName(f)]
    if (v === undefined) continue
    if (f.type === 'boolean') out[f.key] = v === true
    else if (v === '') continue
    else out[f.key] = f.type === 'number' || f.type === 'port' ? Number(v) : String(v)
  }
  return out
}

/** A refusal shown at its field when it names one; otherwise it stays a message for the form. */
function atField(app: CatalogApp, err: unknown, name: string): unknown {
  if (!(err instanceof ApiError)) return err
  const first = (type: Field['type']) => app.fields.find((f) => f.type === type)
  let field: Field | undefined
  if (err.code === 'HOSTD_CATALOG_VALUES_INVALID') {
    const key =
      /\(([a-zA-Z][a-zA-Z0-9_]*)\)/.exec(err.message)?.[1] ??
      /^The value of ([a-zA-Z][a-zA-Z0-9_]*) /.exec(err.message)?.[1]
    field = app.fields.find((f) => f.key === key)
  } else if (err.code === 'HOSTD_CONTAINERS_NAME_IN_USE' || err.code === 'HOSTD_CONTAINERS_CONFLICT') {
    return new FieldErrors({
      [CONTAINER_NAME]: `A container named “${name || app.id}” exists already: choose another name, or uninstall that one first.`,
    })
  } else if (
    err.code === 'HOSTD_CONTAINERS_PORT_IN_USE' ||
    (err.code === 'HOSTD_CONTAINERS_ENGINE_ERROR' &&
      /port is already allocated|address already in use/i.test(err.message))
  ) {
    field = first('port')
  } else if (err.code === 'HOSTD_CONTAINERS_HOST_ROOT_REFUSED') {
    field = first('path')
  }
  return field ? new FieldErrors({ [inputName(field)]: err.message }) : err
}

/** Sends the request on the install socket; resolves with the result, reports the rest as it comes. */
function installOverSocket(ctx: PageContext, request: object, onMessage: (m: Message) => void): Promise<InstallResult> {
  return new Promise((resolve, reject) => {
    const ws = ctx.socket('/api/catalog/install')
    let done = false
    ws.onopen = () => ws.send(JSON.stringify(request))
    ws.onmessage = (event: MessageEvent<string>) => {
      let m: Message
      try {
        m = JSON.parse(event.data) as Message
      } catch {
        return
      }
      if (m.type !== 'result') return onMessage(m)
      done = true
      if (m.ok) resolve(m)
      else reject(new ApiError(0, m.error, m.message))
    }
    ws.onclose = (event) => {
      if (done) return
      done = true
      reject(
        new ApiError(
          0,
          'HOSTD_NETWORK',
          event.code === 1006
            ? 'The server refused or cut the install connection. Check that you are still signed in, then try again.'
            : `The install connection closed (${event.code} ${event.reason}).`,
        ),
      )
    }
  })
}

function layerItem(m: Extract<Message, { type: 'pull' }>, before: ProgressItem | undefined): ProgressItem {
  const done = /^(Pull complete|Already exists)/.test(m.status)
  const complete = /^Download complete|Verifying Checksum/.test(m.status)
  const total = m.total ?? before?.total
  return {
    id: m.id!,
    label: `Layer ${m.id}`,
    status: m.status,
    current: complete ? total : (m.current ?? before?.current),
    total,
    state: done ? 'done' : 'running',
  }
}

function ProgressPanel({ progress }: { progress: Progress }) {
  return (
    <section class="install-progress" aria-labelledby="install-progress-title">
      <h2 id="install-progress-title">Progress</h2>
      <ol class="install-stages">
        {STAGES.map((label, i) => {
          const state = i < progress.stage ? 'done' : i === progress.stage ? 'current' : 'pending'
          return (
            <li key={label} class={`stage-${state}`} aria-current={state === 'current' ? 'step' : undefined}>
              {state === 'done' ? (
                <Icon name="circle-check" size={18} />
              ) : state === 'current' ? (
                <span class="spinner" aria-hidden="true" />
              ) : (
                <span class="stage-dot" aria-hidden="true" />
              )}
              <span>
                {label}
                {i === 1 && progress.noPull && progress.stage > 1 ? ' (already on this server)' : ''}
                <span class="sr-only">{state === 'done' ? ', done' : state === 'current' ? ', in progress' : ''}</span>
              </span>
            </li>
          )
        })}
      </ol>
      <p class="install-step" role="status">
        {progress.step}
      </p>
      {progress.layers.length > 0 && <ProgressList label="Image download" items={progress.layers} />}
    </section>
  )
}

function Installed({ ctx, app, result }: { ctx: PageContext; app: CatalogApp; result: InstallResult }) {
  return (
    <Card title="Installed">
      <div class="install-done" role="status">
        <span class="install-done-icon">
          <Icon name="circle-check" size={28} />
        </span>
        <div class="stack">
          <p>
            <strong>{app.title}</strong> runs in the container <strong class="mono">{result.name}</strong> (version{' '}
            {result.version}).
          </p>
          {app.defaultCredentials && (
            <p class="muted">
              Sign in with <code>{app.defaultCredentials.username}</code> /{' '}
              <code>{app.defaultCredentials.password}</code>, then change them.
            </p>
          )}
          <p class="install-links">
            <a class="btn btn-primary btn-md" href={containerPath(result.containerId)}>
              <Icon name="box" size={16} /> <span>Open the container {result.name}</span>
            </a>
            <a class="btn btn-secondary btn-md" href={appPath(ctx.base, app)}>
              Back to {app.title}
            </a>
            <a class="btn btn-ghost btn-md" href={`${ctx.base}/installed`}>
              All installed apps
            </a>
          </p>
        </div>
      </div>
    </Card>
  )
}

export function InstallView({
  ctx,
  catalog,
  app,
  onInstalled,
}: {
  ctx: PageContext
  catalog: Catalog
  app: CatalogApp
  onInstalled: () => void
}) {
  const [progress, setProgress] = useState<Progress | null>(null)
  const [result, setResult] = useState<InstallResult | null>(null)
  const blocked = installBlock(ctx, catalog, app, true)

  const onMessage = (m: Message) =>
    setProgress((p) => {
      const now = p ?? { stage: 0, step: '', noPull: true, layers: [] }
      if (m.type === 'accepted') return { ...now, stage: 0, step: 'The server took the request.' }
      if (m.type === 'pull-start') return { ...now, stage: 1, noPull: false, step: `Pulling ${m.image}` }
      if (m.type === 'created')
        return {
          ...now,
          stage: 2,
          step: 'Container created; starting it.',
          layers: now.layers.map((l) => ({ ...l, state: 'done', status: 'Done' })),
        }
      if (m.type !== 'pull') return now
      if (!m.id || !LAYER_STATUS.test(m.status)) return { ...now, step: m.status }
      const index = now.layers.findIndex((l) => l.id === m.id)
      const item = layerItem(m, now.layers[index])
      return { ...now, layers: index < 0 ? [...now.layers, item] : now.layers.map((l, i) => (i === index ? item : l)) }
    })

  const submit = async (values: FormValues) => {
    const name = String(values[CONTAINER_NAME] ?? '').trim()
    const request = {
      appId: app.id,
      source: app.source,
      values: requestValues(app.fields, values),
      ...(name ? { name } : {}),
    }
    setProgress({ stage: 0, step: 'Connecting…', noPull: true, layers: [] })
    try {
      const done = await installOverSocket(ctx, request, onMessage)
      setResult(done)
      ctx.toast.success(`${app.title} is installed as ${done.name}`)
      onInstalled()
    } catch (err) {
      setProgress(null)
      throw atField(app, err, name)
    }
  }

  return (
    <>
      <a class="back-link" href={appPath(ctx.base, app)}>
        <Icon name="chevron-down" size={16} class="back-icon" /> {app.title}
      </a>
      <PageHeader
        title={`Install ${app.title}`}
        description={`Version ${app.version} · ${app.kind === 'stack' ? 'a stack' : app.image}`}
      />
      {result ? (
        <Installed ctx={ctx} app={app} result={result} />
      ) : blocked ? (
        <p class="notice">
          <Icon name="lock" /> <span>{blocked}</span>
        </p>
      ) : (
        <div class="install-layout">
          <Card title="Settings">
            {app.note && (
              <p class="notice notice-info install-note">
                <Icon name="info" /> <span>{app.note}</span>
              </p>
            )}
            <Form
              submitLabel={progress ? 'Installing…' : 'Install'}
              label={`Install ${app.title}`}
              onSubmit={submit}
              actions={
                !progress && (
                  <a class="btn btn-ghost btn-md" href={appPath(ctx.base, app)}>
                    Cancel
                  </a>
                )
              }
            >
              <TextField
                name={CONTAINER_NAME}
                label="Container name (optional)"
                hint="Leave empty for the app's default name."
                pattern="[a-zA-Z0-9][a-zA-Z0-9_.\-]*"
                maxLength={128}
                autoComplete="off"
                spellcheck={false}
              />
              {app.fields.map((f) => (
                <FieldInput key={f.key} field={f} />
              ))}
            </Form>
          </Card>
          {progress && <ProgressPanel progress={progress} />}
        </div>
      )}
    </>
  )
}
