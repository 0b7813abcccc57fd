/**
 * The run form: builds a RunSpec (advanced fields for admins only), sends it over the install socket and shows
 * the pull (one bar per layer), create and start as they happen; on success it opens the new container.
 */
import { useEffect, useRef, useState } from 'preact/hooks'
import {
  ApiError,
  Badge,
  Button,
  Card,
  Dialog,
  Form,
  Icon,
  IconButton,
  PageHeader,
  ProgressList,
  Select,
  TextArea,
  TextField,
  useResource,
  type PageContext,
} from '@hostd/ui'
import { PullLayers, Step } from './common.tsx'
import { containerPath, type NetworkItem, type PullMessage } from './model.ts'
import { ADVANCED_FIELDS, BASIC_FIELDS, buildSpec, fieldErrorsFor } from './run-spec.ts'
import { EnvRows, PortRows, VolumeRows, emptyRows, type Rows } from './rows.tsx'
import type { RunSpec } from '../../src/runspec.ts'

type Phase = 'sending' | 'pulling' | 'creating' | 'starting' | 'done'
const ORDER: Phase[] = ['sending', 'pulling', 'creating', 'starting', 'done']

interface Install {
  image: string
  phase: Phase
  failed: boolean
  /** The image had to be pulled (else it was on this host already). */
  pulled: boolean
  layers: PullLayers
  error?: string
}

type InstallMessage =
  | { type: 'accepted'; image: string }
  | { type: 'pull-start'; image: string }
  | ({ type: 'pull'; image: string } & PullMessage)
  | { type: 'created'; id: string }
  | { type: 'started'; id: string; name: string }
  | { type: 'result'; ok: true; id: string; name: string }
  | { type: 'result'; ok: false; error: string; message: string }

/** Sends the spec over /api/containers/install; resolves with the new container, rejects with the server's ApiError. */
function installOverSocket(
  ctx: PageContext,
  spec: RunSpec,
  onMessage: (m: InstallMessage) => void,
): Promise<{ id: string; name: string }> {
  return new Promise((resolve, reject) => {
    const ws = ctx.socket('/api/containers/install')
    let failure: ApiError | null = null
    let created: { id: string; name: string } | null = null
    ws.onopen = () => ws.send(JSON.stringify(spec))
    ws.onmessage = (e: MessageEvent<string>) => {
      const m = JSON.parse(e.data) as InstallMessage
      onMessage(m)
      if (m.type !== 'result') return
      if (m.ok) created = { id: m.id, name: m.name }
      else failure = new ApiError(0, m.error, m.message)
    }
    ws.onclose = (e) => {
      if (created) resolve(created)
      else if (failure) reject(new ApiError(e.code >= 4000 ? e.code - 4000 : 0, failure.code, failure.message))
      else
        reject(
          new ApiError(
            0,
            'HOSTD_NETWORK',
            e.reason ||
              'The connection to the server closed before the container was created. Check the list: it may still be starting.',
          ),
        )
    }
  })
}

function InstallProgress({ install }: { install: Install }) {
  const state = (phase: Phase) => {
    const [at, here] = [ORDER.indexOf(install.phase), ORDER.indexOf(phase)]
    return here < at ? 'done' : here === at ? (install.failed ? 'failed' : 'running') : 'pending'
  }
  return (
    <Card title={`Running ${install.image}`} class="ctr-install">
      <div class="stack" aria-live="polite">
        <ol class="ctr-steps">
          <Step state={state('sending')}>Send the run spec</Step>
          {install.pulled && (
            <Step state={state('pulling')}>
              Pull {install.image}
              {install.layers.status && <span class="detail"> · {install.layers.status}</span>}
            </Step>
          )}
          <Step state={state('creating')}>Check the role rules and create the container</Step>
          <Step state={state('starting')}>Start it</Step>
        </ol>
        {install.layers.items.length > 0 && (
          <ProgressList label={`Layers of ${install.image}`} items={install.layers.items} />
        )}
        {install.error && (
          <p class="form-error" role="alert">
            <Icon name="circle-alert" /> {install.error}
          </p>
        )}
      </div>
    </Card>
  )
}

interface SearchResult {
  name: string
  description: string
  stars: number
  official: boolean
  automated: boolean
}

/** Registry search as a helper for the image field; says so plainly when the index cannot be reached. */
/** The repository part of what was typed ("nginx" of "nginx:1.27"), the search's starting term. */
export function searchTerm(typed: string): string {
  return typed
    .trim()
    .replace(/@.*$/, '')
    .replace(/:[^/:]*$/, '')
}

/** A picked result with the tag that was typed, when one was ("nginx:1.27" typed, "nginx" picked: "nginx:1.27"). */
export function withTypedTag(picked: string, typed: string): string {
  const tag = /:([^/:@]+)$/.exec(typed.trim().replace(/@.*$/, ''))?.[1]
  return tag ? `${picked}:${tag}` : picked
}

function RegistrySearch({
  ctx,
  open,
  typed,
  onClose,
  onPick,
}: {
  ctx: PageContext
  open: boolean
  /** What the image field holds: the search starts from it. */
  typed: string
  onClose: () => void
  onPick: (name: string) => void
}) {
  const [results, setResults] = useState<SearchResult[] | null>(null)
  const [unavailable, setUnavailable] = useState<string | null>(null)
  return (
    <Dialog open={open} title="Search the registry" size="lg" onClose={onClose}>
      <Form
        label="Registry search"
        submitLabel="Search"
        onSubmit={async (v) => {
          setUnavailable(null)
          try {
            const answer = await ctx.api.get<{ results: SearchResult[] }>(
              `/api/registry/search?q=${encodeURIComponent(String(v.q))}&limit=25`,
            )
            setResults(answer.results)
          } catch (err) {
            if (err instanceof ApiError && err.code === 'HOSTD_REGISTRY_SEARCH_UNAVAILABLE') {
              setResults(null)
              setUnavailable(err.message)
            } else throw err
          }
        }}
      >
        <TextField
          name="q"
          label="Search term"
          required
          maxLength={256}
          defaultValue={searchTerm(typed)}
          placeholder="Image name"
        />
      </Form>
      {unavailable && (
        <div class="notice" role="status">
          <Icon name="cloud" />
          <span>
            Registry search is not available here ({unavailable}). Type the image reference in the Image field instead,
            for example <code>nginx:1.27</code>.
          </span>
        </div>
      )}
      {results && results.length === 0 && (
        <p class="muted" role="status">
          Nothing found.
        </p>
      )}
      {results && results.length > 0 && (
        <ul class="ctr-search-results" aria-label="Search results">
          {results.map((r) => (
            <li key={r.name}>
              <div>
                <strong class="mono">{r.name}</strong> {r.official && <Badge tone="success">official</Badge>}
                <span class="detail"> ★ {r.stars}</span>
                {r.description && <p class="detail">{r.description}</p>}
              </div>
              <Button size="sm" aria-label={`Use ${r.name}`} onClick={() => onPick(r.name)}>
                Use
              </Button>
            </li>
          ))}
        </ul>
      )}
    </Dialog>
  )
}

/** The engine's restart policies in words; hostd's default is "unless-stopped" (the engine's own is "no"). */
export const RESTART_OPTIONS = [
  { value: 'unless-stopped', label: 'Unless stopped by hand (recommended)' },
  { value: 'always', label: 'Always, even after a stop by hand once the engine restarts' },
  { value: 'on-failure', label: 'Only when it fails' },
  { value: 'no', label: 'Never' },
]

export function RunView({ ctx }: { ctx: PageContext }) {
  const admin = ctx.can('admin')
  const networks = useResource((signal) => ctx.api.get<{ items: NetworkItem[] }>('/api/networks', { signal }), [])
  const [image, setImage] = useState('')
  const [searching, setSearching] = useState(false)
  const [rows, setRows] = useState<Rows>(emptyRows)
  const [install, setInstall] = useState<Install | null>(null)
  const [, redraw] = useState(0)
  const progress = useRef<HTMLDivElement>(null)
  useEffect(() => {
    if (install?.phase === 'sending') progress.current?.scrollIntoView({ block: 'nearest', behavior: 'smooth' })
  }, [install?.phase])

  const networkOptions = [
    { value: '', label: 'Default (bridge)' },
    ...(networks.data?.items ?? [])
      .filter((n) => n.name !== 'bridge')
      .map((n) => ({
        value: n.name,
        label:
          n.name === 'host'
            ? "host (the host's own network: admin only)"
            : n.name === 'none'
              ? 'none (no network)'
              : `${n.name} (${n.driver})`,
      })),
  ]
  const shown = admin ? [...BASIC_FIELDS, ...ADVANCED_FIELDS] : BASIC_FIELDS

  const submit = async (values: Record<string, string | boolean>) => {
    const spec = buildSpec(values, admin, rows)
    const job: Install = { image: spec.image, phase: 'sending', failed: false, pulled: false, layers: new PullLayers() }
    setInstall(job)
    const update = (change: Partial<Install>) => {
      Object.assign(job, change)
      redraw((n) => n + 1)
    }
    try {
      const created = await installOverSocket(ctx, spec, (m) => {
        if (m.type === 'accepted') update({ phase: 'creating' })
        else if (m.type === 'pull-start') update({ phase: 'pulling', pulled: true })
        else if (m.type === 'pull') {
          job.layers.add(m)
          // The engine's last word on a pull ("Status: Downloaded newer image…"): the create comes next.
          update(/^Status:/.test(m.status) ? { phase: 'creating' } : {})
        } else if (m.type === 'created') update({ phase: 'starting' })
        else if (m.type === 'started') update({ phase: 'done' })
      })
      update({ phase: 'done' })
      ctx.toast.success(`${created.name} is running`)
      ctx.navigate(containerPath(ctx.base, created))
    } catch (err) {
      job.layers.fail()
      update({ failed: true, error: (err as Error).message })
      if (err instanceof ApiError) throw fieldErrorsFor(err, spec, shown) ?? err
      throw err
    }
  }

  return (
    <>
      <nav class="ctr-back" aria-label="Breadcrumb">
        <a href={ctx.base}>Containers</a> <span aria-hidden="true">/</span> <span aria-current="page">Run</span>
      </nav>
      <PageHeader
        title="Run a container"
        description="From an image on this host or in a registry (it is pulled when missing). Every run is written to the audit log."
      />
      <Card>
        <Form
          label="Run a container"
          submitLabel="Run"
          onSubmit={submit}
          actions={<Button onClick={() => ctx.navigate(ctx.base)}>Cancel</Button>}
        >
          <fieldset class="ctr-fieldset">
            <legend>What to run</legend>
            <div class="ctr-image-row">
              <TextField
                name="image"
                label="Image"
                required
                maxLength={1024}
                autoComplete="off"
                spellcheck={false}
                value={image}
                onInput={(e) => setImage(e.currentTarget.value)}
                hint="A reference such as nginx:1.27 or registry.example.com/team/app:2. The search button looks it up."
              />
              <IconButton
                icon="search"
                label="Search the registry"
                variant="secondary"
                onClick={() => setSearching(true)}
              />
            </div>
            <div class="ctr-grid">
              <TextField
                name="name"
                label="Name"
                maxLength={128}
                pattern="[a-zA-Z0-9][a-zA-Z0-9_.\-]*"
                autoComplete="off"
                spellcheck={false}
                hint="Letters, digits, _ . -; the engine picks one when empty."
              />
              <Select
                name="restartPolicy"
                label="Restart policy"
                options={RESTART_OPTIONS}
                defaultValue="unless-stopped"
                hint="When the engine starts it again: after it exits, and when the engine (or the host) starts."
              />
            </div>
            <TextField
              name="command"
              label="Command"
              autoComplete="off"
              spellcheck={false}
              class="input mono"
              hint="Replaces the image's command; split like a shell, nothing expanded: sh -c 'echo hi'."
            />
          </fieldset>

          <fieldset class="ctr-fieldset">
            <legend>Network</legend>
            <div class="ctr-grid">
              <Select
                name="network"
                label="Network"
                options={networkOptions}
                defaultValue=""
                hint={networks.error ? 'The networks could not be listed: the default applies.' : undefined}
              />
            </div>
            <PortRows rows={rows.ports} onChange={(ports) => setRows({ ...rows, ports })} />
          </fieldset>

          <fieldset class="ctr-fieldset">
            <legend>Storage and environment</legend>
            <VolumeRows rows={rows.volumes} onChange={(volumes) => setRows({ ...rows, volumes })} admin={admin} />
            <EnvRows rows={rows.env} onChange={(env) => setRows({ ...rows, env })} />
          </fieldset>

          <fieldset class="ctr-fieldset">
            <legend>Limits</legend>
            <div class="ctr-grid ctr-grid-3">
              <TextField
                name="cpus"
                label="Processors"
                type="number"
                min="0.01"
                step="0.01"
                inputMode="decimal"
                hint="e.g. 1.5; empty for no limit."
              />
              <TextField
                name="memory"
                label="Memory"
                pattern="[0-9]+(\.[0-9]+)?[bkmgBKMG]?"
                autoComplete="off"
                placeholder="No limit"
                hint="e.g. 512m or 2g; empty for no limit."
              />
              <TextField
                name="workdir"
                label="Working directory"
                pattern="/.*"
                autoComplete="off"
                spellcheck={false}
                placeholder="Image default"
                hint="An absolute path inside."
              />
            </div>
          </fieldset>

          {admin ? (
            <fieldset class="ctr-fieldset">
              <legend>Advanced (admin)</legend>
              <p class="field-hint">
                These can reach the host: mounts, devices, capabilities and docker flags are for admins only.
              </p>
              <div class="ctr-grid">
                <TextField
                  name="entrypoint"
                  label="Entrypoint"
                  autoComplete="off"
                  spellcheck={false}
                  hint="Replaces the image's entrypoint, e.g. /bin/sh -c."
                />
                <TextField
                  name="user"
                  label="User"
                  autoComplete="off"
                  spellcheck={false}
                  placeholder="Image default"
                  hint="user or uid[:gid] inside, e.g. 1000:1000."
                />
                <TextField
                  name="capAdd"
                  label="Added capabilities"
                  autoComplete="off"
                  spellcheck={false}
                  placeholder="None"
                  hint="Comma- or space-separated, e.g. NET_ADMIN."
                />
                <TextField
                  name="dns"
                  label="DNS servers"
                  autoComplete="off"
                  spellcheck={false}
                  placeholder="Engine default"
                  hint="IP addresses, comma- or space-separated, e.g. 9.9.9.9."
                />
                <TextArea
                  name="mounts"
                  label="Mounts"
                  rows={2}
                  spellcheck={false}
                  placeholder="None"
                  hint="One per line, as docker run --mount: type (bind, volume, tmpfs), source, target, readonly; e.g. type=bind,source=/srv,target=/srv."
                />
                <TextArea
                  name="tmpfs"
                  label="tmpfs"
                  rows={2}
                  spellcheck={false}
                  placeholder="None"
                  hint="One per line: path[:options], e.g. /run:size=64m."
                />
                <TextArea
                  name="devices"
                  label="Devices"
                  rows={2}
                  spellcheck={false}
                  placeholder="None"
                  hint="One per line: host[:container][:permissions], e.g. /dev/fuse."
                />
                <TextField
                  name="extraArgs"
                  label="Extra docker run flags"
                  autoComplete="off"
                  spellcheck={false}
                  placeholder="None"
                  hint="Allowlisted flags only (--label, --hostname, --add-host, --shm-size…), e.g. --read-only --init."
                />
              </div>
            </fieldset>
          ) : (
            <p class="ctr-note">
              <Icon name="lock" size={16} /> Entrypoint, user, added capabilities, DNS servers, mounts, tmpfs, devices
              and extra docker flags can be set by an admin.
            </p>
          )}
        </Form>
      </Card>
      <div ref={progress}>{install && <InstallProgress install={install} />}</div>
      <RegistrySearch
        ctx={ctx}
        open={searching}
        typed={image}
        onClose={() => setSearching(false)}
        onPick={(name) => {
          setImage(withTypedTag(name, image))
          setSearching(false)
        }}
      />
    </>
  )
}
