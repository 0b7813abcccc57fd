/**
 * The backups page (admins only): jobs with their last result, next run and live progress (the /api/backups/live
 * socket); snapshots of a repository, browsed folder by folder, with restores of files, folders and containers;
 * repositories, with the recovery kit shown once when one is made.
 */
import { useEffect, useState } from 'preact/hooks'
import {
  Async,
  Badge,
  Button,
  Card,
  Checkbox,
  CopyButton,
  DataTable,
  Dialog,
  Empty,
  Form,
  PageHeader,
  ProgressBar,
  Select,
  Tabs,
  TextArea,
  TextField,
  adoptStyles,
  defineElement,
  formatBytes,
  formatDateTime,
  useResource,
  type FormValues,
  type PageContext,
} from '@hostd/ui'
import type { JobView, Progress, RepositoryView, RunResult, Snapshot } from '../src/schemas.ts'
import css from './backups.css' with { type: 'text' }

interface FileEntry {
  name: string
  path: string
  type: string
  size: number
  mtime: string
}
interface Kit {
  repository: string
  password: string
  text: string
}

const TABS = [
  { id: 'jobs', label: 'Jobs' },
  { id: 'snapshots', label: 'Snapshots and restore' },
  { id: 'repositories', label: 'Repositories' },
]

function BackupsPage({ ctx }: { ctx: PageContext }) {
  const [tab, setTab] = useState('jobs')
  const repos = useResource(
    (signal) => ctx.api.get<{ items: RepositoryView[] }>('/api/backups/repositories', { signal }),
    [],
  )
  return (
    <div class="backups">
      <PageHeader
        title="Backups"
        description="hostd's own state, containers' data and chosen folders, encrypted and deduplicated by restic."
      />
      <Tabs label="Backups" tabs={TABS} selected={tab} onSelect={setTab}>
        {tab === 'jobs' && <JobsTab ctx={ctx} repos={repos.data?.items ?? []} />}
        {tab === 'snapshots' && <SnapshotsTab ctx={ctx} repos={repos.data?.items ?? []} />}
        {tab === 'repositories' && <RepositoriesTab ctx={ctx} onChange={repos.reload} />}
      </Tabs>
    </div>
  )
}

// ---- jobs ----

function JobsTab({ ctx, repos }: { ctx: PageContext; repos: RepositoryView[] }) {
  const jobs = useResource((signal) => ctx.api.get<{ items: JobView[] }>('/api/backups/jobs', { signal }), [], {
    every: 30_000,
  })
  const [live, setLive] = useState<Record<string, Progress>>({})
  const [adding, setAdding] = useState(false)
  useEffect(() => {
    const socket = ctx.socket('/api/backups/live')
    socket.addEventListener('message', (event) => {
      const message = JSON.parse(String(event.data)) as
        | ({ type: 'progress' } & Progress)
        | { type: 'result'; jobId: string; result: RunResult }
      if (message.type === 'progress') setLive((all) => ({ ...all, [message.jobId]: message }))
      else {
        setLive(({ [message.jobId]: _, ...rest }) => rest)
        jobs.reload()
      }
    })
    return () => socket.close()
  }, [])
  const repoName = (id: string) => repos.find((r) => r.id === id)?.name ?? 'removed repository'

  const run = async (job: JobView) => {
    try {
      await ctx.api.post(`/api/backups/jobs/${job.id}/run`)
      ctx.toast.info(`${job.name} is running`)
      jobs.reload()
    } catch (err) {
      ctx.toast.error(err)
    }
  }
  const remove = async (job: JobView) => {
    const ok = await ctx.confirm({
      title: `Delete the job ${job.name}?`,
      message: 'Its snapshots stay in the repository.',
      confirmLabel: 'Delete job',
      danger: true,
    })
    if (!ok) return
    try {
      await ctx.api.post(`/api/backups/jobs/${job.id}/delete`)
      jobs.reload()
    } catch (err) {
      ctx.toast.error(err)
    }
  }

  return (
    <Card
      title="Jobs"
      actions={
        <Button variant="primary" icon="plus" onClick={() => setAdding(true)} disabled={repos.length === 0}>
          New job
        </Button>
      }
    >
      <Async
        resource={jobs}
        label="Loading jobs…"
        isEmpty={(d) => d.items.length === 0}
        empty={
          <Empty title="No backup jobs yet" icon="hard-drive">
            {repos.length === 0
              ? 'Add a repository first (a USB disk, an SFTP server, a REST server), then a job that writes to it.'
              : "A job backs up hostd's own state, and the containers and folders you choose, on a schedule."}
          </Empty>
        }
      >
        {(data) => (
          <ul class="backups-jobs" aria-label="Backup jobs">
            {data.items.map((job) => {
              const progress = live[job.id] ?? job.progress
              return (
                <li key={job.id} class="backups-job">
                  <div class="backups-job-head">
                    <h3>{job.name}</h3>
                    <ResultBadge job={job} running={Boolean(progress)} />
                  </div>
                  <dl class="backups-facts">
                    <dt>Repository</dt>
                    <dd>{repoName(job.repositoryId)}</dd>
                    <dt>What</dt>
                    <dd>{whatOf(job)}</dd>
                    <dt>Last run</dt>
                    <dd>{lastRun(job.lastResult)}</dd>
                    <dt>Next run</dt>
                    <dd>{job.nextRun ? formatDateTime(job.nextRun) : 'Only when asked'}</dd>
                  </dl>
                  {job.lastResult?.error && <p class="backups-error">{job.lastResult.error.message}</p>}
                  {progress && (
                    <ProgressBar
                      label={`Progress of ${job.name}`}
                      value={Math.round(progress.percent * 100)}
                      detail={`${progress.phase}: ${formatBytes(progress.bytesDone)} of ${formatBytes(progress.totalBytes)}`}
                    />
                  )}
                  <div class="backups-actions">
                    <Button
                      icon="play"
                      onClick={() => run(job)}
                      disabled={Boolean(progress)}
                      aria-label={`Run now: ${job.name}`}
                    >
                      Run now
                    </Button>
                    <Button variant="ghost" icon="trash" onClick={() => remove(job)} aria-label={`Delete ${job.name}`}>
                      Delete
                    </Button>
                  </div>
                </li>
              )
            })}
          </ul>
        )}
      </Async>
      {adding && (
        <JobDialog
          ctx={ctx}
          repos={repos}
          onClose={() => setAdding(false)}
          onSaved={() => {
            setAdding(false)
            jobs.reload()
          }}
        />
      )}
    </Card>
  )
}

function ResultBadge({ job, running }: { job: JobView; running: boolean }) {
  if (running) return <Badge tone="accent">Running</Badge>
  if (!job.lastResult) return <Badge>Never ran</Badge>
  return job.lastResult.status === 'success' ? (
    <Badge tone="success">Succeeded</Badge>
  ) : (
    <Badge tone="danger">Failed</Badge>
  )
}

function whatOf(job: JobView): string {
  const parts = ["hostd's state"]
  if (job.containers.length)
    parts.push(`containers ${job.containers.join(', ')}${job.stopContainers ? ' (stopped for the copy)' : ''}`)
  if (job.folders.length) parts.push(job.folders.join(', '))
  return parts.join('; ')
}

function lastRun(r: RunResult | null): string {
  if (!r) return 'Never'
  const when = formatDateTime(r.startedAt)
  if (r.status === 'failure') return `${when}: failed`
  return `${when}: ${formatBytes(r.bytesAdded)} added, ${r.durationSeconds.toFixed(1)} s`
}

function JobDialog({
  ctx,
  repos,
  onClose,
  onSaved,
}: {
  ctx: PageContext
  repos: RepositoryView[]
  onClose: () => void
  onSaved: () => void
}) {
  const containers = useResource(
    (signal) =>
      ctx.api.get<{ items: { name: string; state: string }[]; available: boolean }>('/api/backups/containers', {
        signal,
      }),
    [],
  )
  const submit = async (values: FormValues) => {
    const every = String(values.every ?? '').trim()
    await ctx.api.post('/api/backups/jobs', {
      name: String(values.name),
      repositoryId: String(values.repositoryId),
      containers: (containers.data?.items ?? [])
        .filter((c) => values[`container:${c.name}`] === true)
        .map((c) => c.name),
      stopContainers: values.stopContainers === true,
      folders: String(values.folders ?? '')
        .split('\n')
        .map((f) => f.trim())
        .filter(Boolean),
      intervalMinutes: every === '' ? null : Number(every),
    })
    ctx.toast.success(`${String(values.name)} was created`)
    onSaved()
  }
  return (
    <Dialog open title="New backup job" onClose={onClose} size="lg">
      <Form
        onSubmit={submit}
        submitLabel="Create job"
        errorFields={{ HOSTD_BACKUPS_EXISTS: 'name' }}
        actions={<Button onClick={onClose}>Cancel</Button>}
      >
        <TextField name="name" label="Name" required maxLength={100} />
        <Select name="repositoryId" label="Repository" options={repos.map((r) => ({ value: r.id, label: r.name }))} />
        <fieldset class="backups-fieldset">
          <legend>Containers</legend>
          {containers.data?.available === false && <p>The containers plugin is not running.</p>}
          {(containers.data?.items ?? []).map((c) => (
            <Checkbox key={c.name} name={`container:${c.name}`} label={`${c.name} (${c.state})`} />
          ))}
          {containers.data?.available && containers.data.items.length === 0 && <p>No containers.</p>}
          <Checkbox
            name="stopContainers"
            label="Stop them for a consistent copy"
            hint="Started again afterwards, whatever happens"
          />
        </fieldset>
        <TextArea
          name="folders"
          label="Folders"
          hint="Absolute paths, one per line. hostd's own state is always in."
          rows={3}
        />
        <TextField
          name="every"
          label="Runs every (minutes)"
          type="number"
          min={5}
          defaultValue="60"
          hint="Empty: only when asked. Keeps the latest 10, hourly 24, daily 7, weekly 4, monthly 12."
        />
      </Form>
    </Dialog>
  )
}

// ---- snapshots ----

function SnapshotsTab({ ctx, repos }: { ctx: PageContext; repos: RepositoryView[] }) {
  const [repoId, setRepoId] = useState<string>('')
  const chosen = repoId || repos[0]?.id || ''
  const [snapshot, setSnapshot] = useState<Snapshot | null>(null)
  if (repos.length === 0)
    return (
      <Card title="Snapshots">
        <Empty title="No repositories" icon="hard-drive">
          Add a repository to see its snapshots.
        </Empty>
      </Card>
    )
  return (
    <Card title="Snapshots">
      <label class="backups-inline">
        Repository{' '}
        <select
          value={chosen}
          onChange={(e) => {
            setRepoId((e.target as HTMLSelectElement).value)
            setSnapshot(null)
          }}
        >
          {repos.map((r) => (
            <option key={r.id} value={r.id}>
              {r.name}
            </option>
          ))}
        </select>
      </label>
      <SnapshotList ctx={ctx} repoId={chosen} onOpen={setSnapshot} />
      {snapshot && <SnapshotBrowser ctx={ctx} repoId={chosen} snapshot={snapshot} onClose={() => setSnapshot(null)} />}
    </Card>
  )
}

function SnapshotList({ ctx, repoId, onOpen }: { ctx: PageContext; repoId: string; onOpen: (s: Snapshot) => void }) {
  const snaps = useResource(
    (signal) => ctx.api.get<{ items: Snapshot[] }>(`/api/backups/repositories/${repoId}/snapshots`, { signal }),
    [repoId],
  )
  return (
    <Async resource={snaps} label="Loading snapshots…" errorTitle="The snapshots could not be listed">
      {(data) => (
        <DataTable
          caption="Snapshots"
          hideCaption
          rowKey={(s) => s.id}
          rows={data.items}
          empty={<Empty title="No snapshots yet" icon="clock" />}
          columns={[
            { key: 'time', label: 'Taken', render: (s) => formatDateTime(s.time), sortable: true },
            { key: 'shortId', label: 'Snapshot' },
            { key: 'containers', label: 'Containers', render: (s) => s.containers.join(', ') || '—' },
            {
              key: 'open',
              label: 'Browse',
              render: (s) => (
                <Button size="sm" icon="folder" onClick={() => onOpen(s)} aria-label={`Browse snapshot ${s.shortId}`}>
                  Browse
                </Button>
              ),
            },
          ]}
        />
      )}
    </Async>
  )
}

function SnapshotBrowser({
  ctx,
  repoId,
  snapshot,
  onClose,
}: {
  ctx: PageContext
  repoId: string
  snapshot: Snapshot
  onClose: () => void
}) {
  const [path, setPath] = useState('/')
  const [restoring, setRestoring] = useState<FileEntry | null>(null)
  const base = `/api/backups/repositories/${repoId}/snapshots/${snapshot.id}`
  const files = useResource(
    (signal) =>
      ctx.api.get<{ path: string; items: FileEntry[] }>(`${base}/files?path=${encodeURIComponent(path)}`, { signal }),
    [path, snapshot.id],
  )
  const up = path === '/' ? null : path.replace(/\/[^/]+$/, '') || '/'
  const restoreContainer = async (name: string) => {
    const ok = await ctx.confirm({
      title: `Restore the container ${name}?`,
      message: 'Its volumes and bind folders are written back, then it is created again from its definition.',
      confirmLabel: 'Restore container',
    })
    if (!ok) return
    try {
      await ctx.api.post(`${base}/restore-container`, { name })
      ctx.toast.success(`${name} was restored`)
    } catch (err) {
      ctx.toast.error(err)
    }
  }
  return (
    <section class="backups-browser" aria-label={`Snapshot ${snapshot.shortId}`}>
      <div class="backups-browser-head">
        <h3>
          Snapshot {snapshot.shortId} of {formatDateTime(snapshot.time)}
        </h3>
        <Button variant="ghost" icon="x" onClick={onClose} aria-label="Close the snapshot">
          Close
        </Button>
      </div>
      {snapshot.containers.length > 0 && (
        <div class="backups-actions">
          {snapshot.containers.map((name) => (
            <Button key={name} icon="container" onClick={() => restoreContainer(name)}>
              Restore container {name}
            </Button>
          ))}
        </div>
      )}
      <p class="backups-path">
        {up !== null && (
          <Button size="sm" icon="arrow-up" onClick={() => setPath(up)} aria-label="Up one folder">
            Up
          </Button>
        )}{' '}
        <code>{path}</code>
      </p>
      <Async
        resource={files}
        label="Loading files…"
        isEmpty={(d) => d.items.length === 0}
        empty={<Empty title="Empty folder" icon="folder" />}
      >
        {(data) => (
          <ul class="backups-files" aria-label={`Files in ${path}`}>
            {data.items.map((f) => (
              <li key={f.path}>
                {f.type === 'dir' ? (
                  <Button
                    variant="ghost"
                    size="sm"
                    icon="folder"
                    onClick={() => setPath(f.path)}
                    aria-label={`Open ${f.name}`}
                  >
                    {f.name}
                  </Button>
                ) : (
                  <span class="backups-file">{f.name}</span>
                )}
                <span class="backups-size">{f.type === 'dir' ? '' : formatBytes(f.size)}</span>
                <Button size="sm" icon="rotate-ccw" onClick={() => setRestoring(f)} aria-label={`Restore ${f.name}`}>
                  Restore
                </Button>
              </li>
            ))}
          </ul>
        )}
      </Async>
      {restoring && (
        <RestoreDialog ctx={ctx} url={`${base}/restore`} entry={restoring} onClose={() => setRestoring(null)} />
      )}
    </section>
  )
}

function RestoreDialog({
  ctx,
  url,
  entry,
  onClose,
}: {
  ctx: PageContext
  url: string
  entry: FileEntry
  onClose: () => void
}) {
  const submit = async (values: FormValues) => {
    const target =
      values.where === 'original'
        ? 'original'
        : { root: String(values.root || 'files'), path: String(values.folder ?? '') }
    const out = await ctx.api.post<{ target: string }>(url, { paths: [entry.path], target })
    ctx.toast.success(`${entry.name} was restored to ${out.target}`)
    onClose()
  }
  return (
    <Dialog open title={`Restore ${entry.name}`} onClose={onClose}>
      <Form onSubmit={submit} submitLabel="Restore" actions={<Button onClick={onClose}>Cancel</Button>}>
        <Select
          name="where"
          label="Where"
          options={[
            { value: 'elsewhere', label: 'Into a folder of a file root (under its original path)' },
            { value: 'original', label: 'Back to its place, replacing what is there' },
          ]}
        />
        <TextField name="root" label="File root" defaultValue="files" />
        <TextField name="folder" label="Folder in the root" defaultValue="restored" />
      </Form>
    </Dialog>
  )
}

// ---- repositories ----

function RepositoriesTab({ ctx, onChange }: { ctx: PageContext; onChange: () => void }) {
  const repos = useResource(
    (signal) => ctx.api.get<{ items: RepositoryView[] }>('/api/backups/repositories', { signal }),
    [],
  )
  const [adding, setAdding] = useState(false)
  const [kit, setKit] = useState<Kit | null>(null)
  const remove = async (r: RepositoryView) => {
    const ok = await ctx.confirm({
      title: `Forget the repository ${r.name}?`,
      message: 'hostd stops using it; the repository and its snapshots stay where they are.',
      confirmLabel: 'Forget repository',
      danger: true,
    })
    if (!ok) return
    try {
      await ctx.api.post(`/api/backups/repositories/${r.id}/delete`)
      repos.reload()
      onChange()
    } catch (err) {
      ctx.toast.error(err)
    }
  }
  return (
    <Card
      title="Repositories"
      actions={
        <Button variant="primary" icon="plus" onClick={() => setAdding(true)}>
          Add repository
        </Button>
      }
    >
      <Async resource={repos} label="Loading repositories…">
        {(data) => (
          <DataTable
            caption="Repositories"
            hideCaption
            rowKey={(r) => r.id}
            rows={data.items}
            empty={
              <Empty title="No repositories yet" icon="hard-drive">
                Where backups go: a folder (a USB disk, a mounted share), an SFTP server or a REST server.
              </Empty>
            }
            columns={[
              { key: 'name', label: 'Name', sortable: true },
              { key: 'kind', label: 'Kind', render: (r) => r.location.kind.toUpperCase() },
              { key: 'repository', label: 'Location', render: (r) => <code>{r.repository}</code> },
              { key: 'jobs', label: 'Jobs', align: 'end' },
              {
                key: 'remove',
                label: 'Forget',
                render: (r) => (
                  <Button
                    size="sm"
                    variant="ghost"
                    icon="trash"
                    onClick={() => remove(r)}
                    aria-label={`Forget ${r.name}`}
                  >
                    Forget
                  </Button>
                ),
              },
            ]}
          />
        )}
      </Async>
      {adding && (
        <RepositoryDialog
          ctx={ctx}
          onClose={() => setAdding(false)}
          onSaved={(k) => {
            setAdding(false)
            setKit(k)
            repos.reload()
            onChange()
          }}
        />
      )}
      {kit && <KitDialog kit={kit} onClose={() => setKit(null)} />}
    </Card>
  )
}

function RepositoryDialog({
  ctx,
  onClose,
  onSaved,
}: {
  ctx: PageContext
  onClose: () => void
  onSaved: (kit: Kit | null) => void
}) {
  const [kind, setKind] = useState<'local' | 'sftp' | 'rest' | 's3'>('local')
  const key = useResource(
    (signal) =>
      kind === 'sftp' ? ctx.api.get<{ publicKey: string }>('/api/backups/ssh-key', { signal }) : Promise.resolve(null),
    [kind],
  )
  const submit = async (values: FormValues) => {
    const location =
      kind === 'local'
        ? { kind, path: String(values.path) }
        : kind === 'sftp'
          ? {
              kind,
              host: String(values.host),
              port: Number(values.port || 22),
              user: String(values.user),
              path: String(values.path),
            }
          : kind === 's3'
            ? {
                kind,
                endpoint: String(values.endpoint),
                bucket: String(values.bucket),
                ...(values.prefix ? { path: String(values.prefix) } : {}),
                accessKeyId: String(values.accessKeyId),
                ...(values.region ? { region: String(values.region) } : {}),
              }
            : { kind, url: String(values.url), ...(values.username ? { username: String(values.username) } : {}) }
    const out = await ctx.api.post<{ recoveryKit: Kit | null }>('/api/backups/repositories', {
      name: String(values.name),
      location,
      ...(values.password ? { password: String(values.password) } : {}),
      ...(kind === 'rest' && values.restPassword ? { restPassword: String(values.restPassword) } : {}),
      ...(kind === 's3' ? { s3SecretAccessKey: String(values.secretAccessKey) } : {}),
      mode: values.mode === 'open' ? 'open' : 'create',
    })
    ctx.toast.success(`${String(values.name)} was added`)
    onSaved(out.recoveryKit)
  }
  return (
    <Dialog open title="Add a repository" onClose={onClose} size="lg">
      <Form
        onSubmit={submit}
        submitLabel="Add repository"
        errorFields={{ HOSTD_BACKUPS_WRONG_PASSWORD: 'password' }}
        actions={<Button onClick={onClose}>Cancel</Button>}
      >
        <TextField name="name" label="Name" required maxLength={100} />
        <Select
          name="kind"
          label="Kind"
          value={kind}
          onChange={(e) => setKind((e.target as HTMLSelectElement).value as typeof kind)}
          options={[
            { value: 'local', label: 'A folder of this host (USB disk, mounted share)' },
            { value: 'sftp', label: 'SFTP server' },
            { value: 'rest', label: 'REST server (rest-server, rclone serve restic)' },
            { value: 's3', label: 'S3-compatible object storage' },
          ]}
        />
        {kind === 'local' && <TextField name="path" label="Folder" required pattern="/.*" hint="An absolute path" />}
        {kind === 'sftp' && (
          <>
            <TextField name="host" label="Host" required />
            <TextField name="port" label="Port" type="number" min={1} max={65535} defaultValue="22" />
            <TextField name="user" label="User" required />
            <TextField name="path" label="Folder on the server" required pattern="/.*" />
            {key.data && (
              <div class="backups-key">
                <p>Add hostd's key to the account's ~/.ssh/authorized_keys:</p>
                <code>{key.data.publicKey}</code>
                <CopyButton text={key.data.publicKey} label="Copy the public key" />
              </div>
            )}
          </>
        )}
        {kind === 'rest' && (
          <>
            <TextField name="url" label="URL" required pattern="https?://.*" />
            <TextField name="username" label="Username" />
            <TextField name="restPassword" label="Server password" type="password" autoComplete="off" />
          </>
        )}
        {kind === 's3' && (
          <>
            <TextField
              name="endpoint"
              label="Endpoint"
              required
              pattern="https?://.*"
              hint="https://s3.amazonaws.com"
            />
            <TextField name="bucket" label="Bucket" required hint="Made when missing" />
            <TextField name="prefix" label="Folder in the bucket" />
            <TextField name="accessKeyId" label="Access key ID" required autoComplete="off" />
            <TextField name="secretAccessKey" label="Secret access key" type="password" required autoComplete="off" />
            <TextField name="region" label="Region" hint="Where the provider needs one (us-east-1)" />
          </>
        )}
        <Select
          name="mode"
          label="Repository"
          options={[
            { value: 'create', label: 'Create a new one' },
            { value: 'open', label: 'Open an existing one' },
          ]}
        />
        <TextField
          name="password"
          label="Repository password"
          type="password"
          autoComplete="new-password"
          minLength={8}
          hint="Leave empty to have one made (new repositories). Needed to open an existing one."
        />
      </Form>
    </Dialog>
  )
}

function KitDialog({ kit, onClose }: { kit: Kit; onClose: () => void }) {
  const href = `data:text/plain;charset=utf-8,${encodeURIComponent(kit.text)}`
  return (
    <Dialog
      open
      title="Recovery kit"
      onClose={onClose}
      actions={
        <Button variant="primary" onClick={onClose}>
          I have saved it
        </Button>
      }
    >
      <p>
        Without this password the backups cannot be read, by anyone. It is shown this once: download it and keep it away
        from this machine.
      </p>
      <dl class="backups-facts">
        <dt>Repository</dt>
        <dd>
          <code>{kit.repository}</code>
        </dd>
        <dt>Password</dt>
        <dd>
          <code>{kit.password}</code>
        </dd>
      </dl>
      <div class="backups-actions">
        <a class="backups-download" href={href} download="hostd-recovery-kit.txt">
          Download the recovery kit
        </a>
        <CopyButton text={kit.password} label="Copy the password" />
      </div>
    </Dialog>
  )
}

adoptStyles('backups', css)
defineElement('backups-page', BackupsPage)
