/**
 * The file browser: one URL per folder (/storage/files?root=&path=, and &preview=<name> for a file's preview), so
 * reload and back work. Operators list (a page at a time: "Show more"), preview (text, or the image itself) and
 * download; admins also make folders, rename, move, copy and delete (one entry from its row, or the selected ones),
 * upload (drop files on the list or the drop zone, or pick them; one progress bar each) and share the folder over SMB.
 */
import { useEffect, useRef, useState } from 'preact/hooks'
import {
  ApiError,
  Async,
  Badge,
  Button,
  Card,
  DataTable,
  Dialog,
  Empty,
  ErrorState,
  FileDrop,
  Icon,
  IconButton,
  Loading,
  ProgressBar,
  Select,
  TextField,
  Form,
  errorDetails,
  errorMessage,
  ErrorDetails,
  toast,
  formatBytes,
  formatDateTime,
  formatRate,
  useResource,
  type PageContext,
} from '@hostd/ui'
import { ShareFolderDialog } from './shares.tsx'
import {
  withQuery,
  type Entry,
  type FileRoot,
  type HelperState,
  type Done,
  type Listing,
  type Overview,
  type Preview,
  type Uploaded,
  IMAGE_NAME,
  THUMBNAIL_MAX_BYTES,
} from './model.ts'

interface Props {
  ctx: PageContext
  overview: Overview
  helper: HelperState
}

interface Upload {
  id: number
  file: File
  root: string
  path: string
  loaded: number
  /** When the bytes started going out (ms), for the rate. */
  started?: number
  state: 'queued' | 'running' | 'done' | 'exists' | 'failed'
  message?: string
}

const join = (path: string, name: string) => (path ? `${path}/${name}` : name)
const trimSlashes = (path: string) => path.replace(/^\/+|\/+$/g, '')
let uploadIds = 0

export function FilesView({ ctx, overview, helper }: Props) {
  const query = new URLSearchParams(ctx.location.value.search)
  const roots = overview.roots
  const root = roots.find((r) => r.name === query.get('root')) ?? roots[0]
  if (!root)
    return (
      <Empty icon="folder" title="No file roots">
        The folders the file browser may open are set with HOSTD_FILE_ROOTS on the server.
      </Empty>
    )
  return (
    <Folder
      ctx={ctx}
      roots={roots}
      root={root}
      path={trimSlashes(query.get('path') ?? '')}
      preview={query.get('preview')}
      helper={helper}
    />
  )
}

interface FolderProps {
  ctx: PageContext
  roots: FileRoot[]
  root: FileRoot
  path: string
  preview: string | null
  helper: HelperState
}

/** Entries fetched per page: the first page of a folder of 100 000 comes in a few tens of ms; "Show more" adds one. */
const PAGE = 200

type Action = { kind: 'mkdir' } | { kind: 'rename'; entry: Entry } | { kind: 'move' | 'copy'; names: string[] }

function Folder({ ctx, roots, root, path, preview, helper }: FolderProps) {
  const listing = useResource(
    (signal) =>
      ctx.api.get<Listing>(withQuery('/api/storage/fs/list', { root: root.name, path, limit: String(PAGE) }), {
        signal,
      }),
    [root.name, path],
  )
  // Pages after the first, appended by "Show more"; dropped whenever the first page is read again.
  const [more, setMore] = useState<Entry[]>([])
  const [loadingMore, setLoadingMore] = useState(false)
  const [selected, setSelected] = useState<Set<string>>(new Set())
  const [action, setAction] = useState<Action | null>(null)
  const [dragging, setDragging] = useState(false)
  const [uploads, setUploads] = useState<Upload[]>([])
  const [sharing, setSharing] = useState(false)
  const queue = useRef<Promise<void>>(Promise.resolve())
  const admin = ctx.can('admin')
  useEffect(() => setMore([]), [listing.data])
  useEffect(() => setSelected(new Set()), [root.name, path])

  const folderUrl = (rootName: string, p: string) => withQuery(`${ctx.base}/files`, { root: rootName, path: p })
  const previewUrl = (name: string) => withQuery(`${ctx.base}/files`, { root: root.name, path, preview: name })
  const downloadUrl = (name: string) =>
    withQuery('/api/storage/fs/download', { root: root.name, path: join(path, name) })
  const thumbnailUrl = (name: string) =>
    withQuery('/api/storage/fs/thumbnail', { root: root.name, path: join(path, name) })
  const where = path ? `${root.name}/${path}` : root.name

  const showMore = async () => {
    if (!listing.data) return
    setLoadingMore(true)
    try {
      const next = await ctx.api.get<Listing>(
        withQuery('/api/storage/fs/list', {
          root: root.name,
          path,
          offset: String(listing.data.entries.length + more.length),
          limit: String(PAGE),
        }),
      )
      setMore((list) => [...list, ...next.entries])
    } catch (err) {
      toast.error(err)
    } finally {
      setLoadingMore(false)
    }
  }

  const remove = async (names: string[]) => {
    const one = names.length === 1
    const ok = await ctx.confirm({
      title: one ? `Delete ${names[0]}?` : `Delete ${names.length} items?`,
      message: (
        <>
          <p>
            {one ? 'It is' : 'They are'} deleted from <strong>{where}</strong> for good, folders with everything in
            them. This cannot be undone.
          </p>
          {!one && (
            <ul class="storage-names">
              {names.slice(0, 8).map((n) => (
                <li key={n}>{n}</li>
              ))}
              {names.length > 8 && <li>and {names.length - 8} more</li>}
            </ul>
          )}
        </>
      ),
      confirmLabel: 'Delete',
      danger: true,
    })
    if (!ok) return
    try {
      await ctx.api.post<Done>('/api/storage/fs/delete', { root: root.name, path, names })
      toast.success(one ? `Deleted ${names[0]}` : `Deleted ${names.length} items`)
      setSelected(new Set())
    } catch (err) {
      toast.error(err)
    }
    listing.reload()
  }

  const patch = (id: number, change: Partial<Upload>) =>
    setUploads((list) => list.map((u) => (u.id === id ? { ...u, ...change } : u)))
  const send = async (item: Upload, overwrite: boolean) => {
    patch(item.id, { state: 'running', loaded: 0, started: performance.now(), message: undefined })
    try {
      // Always raw bytes: a .json file's own type would make the server refuse it as a JSON body.
      const body = item.file.slice(0, item.file.size, 'application/octet-stream')
      const url = withQuery('/api/storage/fs/upload', {
        root: item.root,
        path: item.path,
        name: item.file.name,
        overwrite: overwrite ? '1' : undefined,
      })
      await ctx.upload<Uploaded>(url, body, { onProgress: (loaded) => patch(item.id, { loaded }) })
      patch(item.id, { state: 'done', loaded: item.file.size })
      listing.reload()
    } catch (err) {
      if ((err as Error).name === 'AbortError') return
      if (err instanceof ApiError && err.code === 'HOSTD_STORAGE_FILE_EXISTS')
        patch(item.id, { state: 'exists', message: 'A file with this name is already there' })
      else if (err instanceof ApiError && err.status === 413)
        patch(item.id, { state: 'failed', message: `Too large for this server: ${readableBytes(err.message)}` })
      else patch(item.id, { state: 'failed', message: errorMessage(err) })
    }
  }
  const enqueue = (files: File[]) => {
    const items: Upload[] = files.map((file) => ({
      id: ++uploadIds,
      file,
      root: root.name,
      path,
      loaded: 0,
      state: 'queued',
    }))
    setUploads((list) => [...list.filter((u) => u.state !== 'done'), ...items])
    // One at a time: each file gets the whole link, and the bars fill in order.
    for (const item of items) queue.current = queue.current.then(() => send(item, false))
  }
  const replace = (item: Upload) => {
    queue.current = queue.current.then(() => send(item, true))
  }
  const dismiss = (item: Upload) => setUploads((list) => list.filter((u) => u.id !== item.id))
  const dropOnList = admin
    ? {
        onDragOver: (e: DragEvent) => {
          if (!e.dataTransfer?.types.includes('Files')) return
          e.preventDefault()
          setDragging(true)
        },
        onDragLeave: (e: DragEvent) => {
          if (!(e.currentTarget as Node).contains(e.relatedTarget as Node | null)) setDragging(false)
        },
        onDrop: (e: DragEvent) => {
          e.preventDefault()
          setDragging(false)
          const files = Array.from(e.dataTransfer?.files ?? [])
          if (files.length) enqueue(files)
        },
      }
    : {}

  const segments = path ? path.split('/') : []
  const failed = listing.error !== undefined && listing.data === undefined
  return (
    <div class="storage-stack">
      <div class="storage-files-bar">
        <nav class="storage-crumbs" aria-label="Folder path">
          <ol>
            <li>
              <Icon name="hard-drive" size={16} />
              {segments.length ? (
                <a href={folderUrl(root.name, '')}>{root.name}</a>
              ) : (
                <span aria-current="page">{root.name}</span>
              )}
            </li>
            {segments.map((segment, i) => (
              <li key={i}>
                {i < segments.length - 1 ? (
                  <a href={folderUrl(root.name, segments.slice(0, i + 1).join('/'))}>{segment}</a>
                ) : (
                  <span aria-current="page">{segment}</span>
                )}
              </li>
            ))}
          </ol>
        </nav>
        <div class="row-actions storage-wrap">
          {roots.length > 1 && (
            <Select
              name="root"
              label="File root"
              value={root.name}
              options={roots.map((r) => ({ value: r.name, label: r.name }))}
              onChange={(e) => ctx.navigate(folderUrl(e.currentTarget.value, ''))}
            />
          )}
          {admin && (
            <Button icon="plus" disabled={failed} onClick={() => setAction({ kind: 'mkdir' })}>
              New folder
            </Button>
          )}
          <Button icon="refresh" onClick={listing.reload} busy={listing.loading && listing.data !== undefined}>
            Refresh
          </Button>
          {admin && (
            <Button icon="folder" disabled={failed || helper.missing} onClick={() => setSharing(true)}>
              Share this folder
            </Button>
          )}
        </div>
      </div>

      {admin && !failed && (
        <FileDrop label={`Files to upload to ${where}`} onFiles={enqueue}>
          Drop files here or on the list to upload them to <strong>{where}</strong>, or
        </FileDrop>
      )}
      {uploads.length > 0 && (
        <Card title="Uploads">
          <ul class="storage-uploads" aria-label="Uploads">
            {uploads.map((u) => (
              <li key={u.id}>
                <ProgressBar
                  label={u.file.name}
                  value={u.state === 'queued' ? undefined : u.loaded}
                  max={Math.max(u.file.size, 1)}
                  detail={uploadDetail(u)}
                  tone={
                    u.state === 'done'
                      ? 'success'
                      : u.state === 'failed'
                        ? 'danger'
                        : u.state === 'exists'
                          ? 'warning'
                          : 'accent'
                  }
                />
                {u.state === 'exists' && (
                  <Button size="sm" onClick={() => replace(u)} aria-label={`Replace ${u.file.name}`}>
                    Replace
                  </Button>
                )}
                {(u.state === 'done' || u.state === 'failed' || u.state === 'exists') && (
                  <IconButton size="sm" icon="x" label={`Dismiss ${u.file.name}`} onClick={() => dismiss(u)} />
                )}
              </li>
            ))}
          </ul>
        </Card>
      )}

      {failed ? (
        <div class="storage-stack">
          <ErrorState
            title={listTitle(listing.error)}
            error={listing.error}
            onRetry={lasting(listing.error) ? undefined : listing.reload}
          />
          {path && (
            <p class="storage-center">
              <a class="btn btn-secondary btn-md" href={folderUrl(root.name, '')}>
                <Icon name="hard-drive" size={16} />
                <span>Open {root.name} instead</span>
              </a>
            </p>
          )}
        </div>
      ) : (
        <Async resource={listing} label={`Listing ${where}…`}>
          {(l) => {
            const rows = more.length ? [...l.entries, ...more] : l.entries
            const left = l.total - rows.length
            // The selection as it stands in the rows shown (a name removed meanwhile drops out).
            const picked = rows.filter((e) => selected.has(e.name)).map((e) => e.name)
            return (
              // A drop target only (spread handlers); "Choose files" above is the keyboard's way in.
              <div class={`storage-stack storage-drop${dragging ? ' over' : ''}`} {...dropOnList}>
                {admin && picked.length > 0 && (
                  <div class="storage-selection" role="toolbar" aria-label="Selected entries">
                    <strong>{picked.length === 1 ? '1 selected' : `${picked.length} selected`}</strong>
                    <Button icon="folder" onClick={() => setAction({ kind: 'move', names: picked })}>
                      Move to…
                    </Button>
                    <Button icon="copy" onClick={() => setAction({ kind: 'copy', names: picked })}>
                      Copy to…
                    </Button>
                    <Button icon="trash" variant="danger" onClick={() => remove(picked)}>
                      Delete
                    </Button>
                    <Button icon="x" variant="ghost" onClick={() => setSelected(new Set())}>
                      Clear selection
                    </Button>
                  </div>
                )}
                <DataTable
                  caption={`Contents of ${where}`}
                  hideCaption
                  rows={rows}
                  rowKey={(e) => e.name}
                  rowLabel={(e) => e.name}
                  selection={admin ? { selected, onChange: (next) => setSelected(next as Set<string>) } : undefined}
                  empty={
                    <Empty icon="folder" title="This folder is empty">
                      {admin ? 'Drop files here to upload them, or make a folder.' : undefined}
                    </Empty>
                  }
                  columns={[
                    {
                      key: 'name',
                      label: 'Name',
                      primary: true,
                      sortValue: (e) => `${e.type === 'directory' ? 0 : 1}${e.name.toLowerCase()}`,
                      render: (e) => (
                        <span class="storage-name">
                          <EntryIcon entry={e} url={thumbnailUrl(e.name)} />
                          <a
                            href={
                              e.type === 'directory' || e.type === 'symlink'
                                ? folderUrl(root.name, join(path, e.name))
                                : previewUrl(e.name)
                            }
                          >
                            {e.name}
                          </a>
                        </span>
                      ),
                    },
                    {
                      key: 'size',
                      label: 'Size',
                      align: 'end',
                      sortValue: (e) => (e.type === 'directory' ? -1 : e.size),
                      render: (e) =>
                        e.type === 'directory' ? (
                          <span class="muted">–</span>
                        ) : (
                          <span class="storage-size">{formatBytes(e.size)}</span>
                        ),
                    },
                    {
                      key: 'modified',
                      label: 'Modified',
                      sortable: true,
                      secondary: true,
                      render: (e) => <time dateTime={e.modified}>{formatDateTime(e.modified)}</time>,
                    },
                    {
                      key: 'type',
                      label: 'Type',
                      sortValue: typeLabel,
                      secondary: true,
                      render: (e) =>
                        e.type === 'symlink' ? (
                          <span>
                            Link to <span class="mono">{e.linkTarget}</span>
                          </span>
                        ) : (
                          typeLabel(e)
                        ),
                    },
                    {
                      key: 'actions',
                      label: 'Actions',
                      align: 'end',
                      render: (e) => (
                        <div class="row-actions storage-row-actions">
                          {e.type !== 'directory' && (
                            <>
                              <IconButton
                                icon="file-text"
                                label={`Preview ${e.name}`}
                                onClick={() => ctx.navigate(previewUrl(e.name))}
                              />
                              <a
                                class="btn btn-ghost btn-md btn-icon"
                                href={downloadUrl(e.name)}
                                download={e.name}
                                aria-label={`Download ${e.name}`}
                                title={`Download ${e.name}`}
                              >
                                <Icon name="download" size={16} />
                              </a>
                            </>
                          )}
                          {admin && (
                            <>
                              <IconButton
                                icon="pencil"
                                label={`Rename ${e.name}`}
                                onClick={() => setAction({ kind: 'rename', entry: e })}
                              />
                              <IconButton icon="trash" label={`Delete ${e.name}`} onClick={() => remove([e.name])} />
                            </>
                          )}
                        </div>
                      ),
                    },
                  ]}
                />
                {left > 0 && (
                  <p class="storage-center">
                    <span class="muted">
                      {rows.length} of {l.total} shown.{' '}
                    </span>
                    <Button onClick={showMore} busy={loadingMore}>
                      Show {Math.min(PAGE, left)} more
                    </Button>
                  </p>
                )}
              </div>
            )
          }}
        </Async>
      )}

      {action?.kind === 'mkdir' && (
        <NameDialog
          title={`New folder in ${where}`}
          label="Folder name"
          submitLabel="Create folder"
          onClose={() => setAction(null)}
          onSubmit={async (name) => {
            await ctx.api.post('/api/storage/fs/mkdir', { root: root.name, path, name })
            toast.success(`Created ${name}`)
            setAction(null)
            listing.reload()
          }}
        />
      )}
      {action?.kind === 'rename' && (
        <NameDialog
          title={`Rename ${action.entry.name}`}
          label="New name"
          submitLabel="Rename"
          initial={action.entry.name}
          onClose={() => setAction(null)}
          onSubmit={async (to) => {
            await ctx.api.post('/api/storage/fs/rename', { root: root.name, path, name: action.entry.name, to })
            toast.success(`Renamed ${action.entry.name} to ${to}`)
            setAction(null)
            listing.reload()
          }}
        />
      )}
      {(action?.kind === 'move' || action?.kind === 'copy') && (
        <DestinationDialog
          ctx={ctx}
          kind={action.kind}
          roots={roots}
          from={{ root: root.name, path }}
          names={action.names}
          onClose={() => setAction(null)}
          onDone={(message) => {
            toast.success(message)
            setSelected(new Set())
            setAction(null)
            listing.reload()
          }}
        />
      )}
      {preview && (
        <PreviewDialog
          ctx={ctx}
          root={root}
          path={join(path, preview)}
          name={preview}
          downloadUrl={downloadUrl(preview)}
          thumbnailUrl={thumbnailUrl(preview)}
          onClose={() => ctx.navigate(folderUrl(root.name, path))}
        />
      )}
      {sharing && (
        <ShareFolderDialog
          ctx={ctx}
          roots={roots}
          helper={helper}
          initial={{ root: root.name, folder: path }}
          onClose={() => setSharing(false)}
          onDone={() => setSharing(false)}
        />
      )}
    </div>
  )
}

/** An image's thumbnail (the file itself, loaded lazily, only under the server's cap), or the entry's icon. */
function EntryIcon({ entry, url }: { entry: Entry; url: string }) {
  const [broken, setBroken] = useState(false)
  if (entry.type === 'file' && IMAGE_NAME.test(entry.name) && entry.size <= THUMBNAIL_MAX_BYTES && !broken)
    return (
      <img class="storage-thumb" src={url} alt="" loading="lazy" decoding="async" onError={() => setBroken(true)} />
    )
  return (
    <Icon
      name={
        entry.type === 'directory'
          ? 'folder'
          : IMAGE_NAME.test(entry.name)
            ? 'image'
            : entry.type === 'file'
              ? 'file-text'
              : 'file'
      }
      class={entry.type === 'directory' ? 'folder' : undefined}
    />
  )
}

/** Asks for one name (a new folder, a new name); the server's answer is shown at the field. */
function NameDialog(props: {
  title: string
  label: string
  submitLabel: string
  initial?: string
  onClose: () => void
  onSubmit: (name: string) => Promise<void>
}) {
  return (
    <Dialog open title={props.title} onClose={props.onClose}>
      <Form
        submitLabel={props.submitLabel}
        actions={<Button onClick={props.onClose}>Cancel</Button>}
        errorFields={{ HOSTD_STORAGE_FILE_EXISTS: 'name', HOSTD_STORAGE_PATH_INVALID: 'name' }}
        onSubmit={(values) => props.onSubmit(String(values.name).trim())}
      >
        <TextField
          name="name"
          label={props.label}
          required
          maxLength={255}
          pattern="[^\/]+"
          hint="One name, without a slash"
          value={props.initial}
          autoComplete="off"
          autoFocus
        />
      </Form>
    </Dialog>
  )
}

interface DestinationProps {
  ctx: PageContext
  kind: 'move' | 'copy'
  roots: FileRoot[]
  from: { root: string; path: string }
  names: string[]
  onClose: () => void
  onDone: (message: string) => void
}

/** Picks the folder to move or copy into, by browsing folders (the current one first), then moves or copies. */
function DestinationDialog({ ctx, kind, roots, from, names, onClose, onDone }: DestinationProps) {
  const [dest, setDest] = useState(from)
  const [error, setError] = useState<unknown>(undefined)
  const [busy, setBusy] = useState(false)
  const folders = useResource(
    (signal) =>
      ctx.api.get<Listing>(withQuery('/api/storage/fs/list', { root: dest.root, path: dest.path, limit: '1000' }), {
        signal,
      }),
    [dest.root, dest.path],
  )
  const verb = kind === 'move' ? 'Move' : 'Copy'
  const what = names.length === 1 ? names[0]! : `${names.length} items`
  const parent = dest.path.split('/').slice(0, -1).join('/')
  const go = async () => {
    setBusy(true)
    setError(undefined)
    try {
      await ctx.api.post<Done>(`/api/storage/fs/${kind}`, {
        root: from.root,
        path: from.path,
        names,
        toRoot: dest.root,
        toPath: dest.path,
      })
      onDone(`${kind === 'move' ? 'Moved' : 'Copied'} ${what} to ${dest.root}/${dest.path}`.replace(/\/$/, ''))
    } catch (err) {
      setError(err)
      setBusy(false)
    }
  }
  return (
    <Dialog
      open
      title={`${verb} ${what}`}
      onClose={onClose}
      actions={
        <>
          <Button onClick={onClose}>Cancel</Button>
          <Button variant="primary" busy={busy} onClick={go}>
            {verb} here
          </Button>
        </>
      }
    >
      <div class="storage-stack">
        {roots.length > 1 && (
          <Select
            name="destination-root"
            label="File root"
            value={dest.root}
            options={roots.map((r) => ({ value: r.name, label: r.name }))}
            onChange={(e) => setDest({ root: e.currentTarget.value, path: '' })}
          />
        )}
        <p>
          Into <strong class="mono">{[dest.root, dest.path].filter(Boolean).join('/')}</strong>
        </p>
        <ul class="storage-folders" aria-label="Folders">
          {dest.path && (
            <li>
              <Button icon="arrow-up" variant="ghost" onClick={() => setDest({ ...dest, path: parent })}>
                Up to {parent ? parent.split('/').pop() : dest.root}
              </Button>
            </li>
          )}
          {folders.data?.entries
            .filter(
              (e) =>
                e.type === 'directory' &&
                !(dest.root === from.root && dest.path === from.path && names.includes(e.name)),
            )
            .map((e) => (
              <li key={e.name}>
                <Button
                  icon="folder"
                  variant="ghost"
                  onClick={() => setDest({ ...dest, path: join(dest.path, e.name) })}
                >
                  {e.name}
                </Button>
              </li>
            ))}
        </ul>
        {folders.error !== undefined && <ErrorState error={folders.error} onRetry={folders.reload} />}
        {error !== undefined && (
          <div class="notice tone-danger" role="alert">
            <p>
              <Icon name="circle-alert" /> {errorMessage(error)}
            </p>
            {errorDetails(error) && <ErrorDetails details={errorDetails(error)!} />}
          </div>
        )}
      </div>
    </Dialog>
  )
}

/** Errors that trying again will not change (the path itself is wrong). */
const lasting = (error: unknown) => error instanceof ApiError && [403, 404, 400].includes(error.status)

/** The listing's error, said by what it means (the server's message follows it). */
function listTitle(error: unknown): string {
  const code = error instanceof ApiError ? error.code : ''
  if (code === 'HOSTD_STORAGE_PATH_FORBIDDEN') return 'This path leads outside the file root'
  if (code === 'HOSTD_STORAGE_ACCESS_DENIED') return 'hostd is not allowed to open this folder'
  if (code === 'HOSTD_STORAGE_NOT_FOUND') return 'This folder does not exist'
  if (code === 'HOSTD_STORAGE_NOT_A_DIRECTORY') return 'This is a file, not a folder'
  return 'This folder cannot be opened'
}

function typeLabel(e: Entry): string {
  if (e.type === 'directory') return 'Folder'
  if (e.type === 'symlink') return 'Link'
  if (e.type === 'other') return 'Special file'
  const dot = e.name.lastIndexOf('.')
  return dot > 0 ? `${e.name.slice(dot + 1).toUpperCase()} file` : 'File'
}

/** "larger than the limit of 8388608 bytes" -> "larger than the limit of 8.0 MiB". */
const readableBytes = (message: string) => message.replace(/(\d{4,}) bytes/g, (_, n: string) => formatBytes(Number(n)))

function uploadDetail(u: Upload): string {
  switch (u.state) {
    case 'queued':
      return 'Waiting'
    case 'running': {
      const seconds = (performance.now() - (u.started ?? performance.now())) / 1000
      return `${formatBytes(u.loaded)} of ${formatBytes(u.file.size)}${seconds > 1 && u.loaded > 0 ? ` · ${formatRate(u.loaded / seconds)}` : ''}`
    }
    case 'done':
      return `Uploaded · ${formatBytes(u.file.size)}`
    default:
      return u.message ?? ''
  }
}

interface PreviewProps {
  ctx: PageContext
  root: FileRoot
  path: string
  name: string
  downloadUrl: string
  thumbnailUrl: string
  onClose: () => void
}

/** A text file's first 64 KiB; says when it is cut, and what to do with a file that is not text. */
function PreviewDialog({ ctx, root, path, name, downloadUrl, thumbnailUrl, onClose }: PreviewProps) {
  const image = IMAGE_NAME.test(name)
  const file = useResource(
    (signal) =>
      image
        ? Promise.resolve(null)
        : ctx.api.get<Preview>(withQuery('/api/storage/fs/read', { root: root.name, path }), { signal }),
    [root.name, path],
  )
  const binary = file.error instanceof ApiError && file.error.code === 'HOSTD_STORAGE_BINARY_FILE'
  return (
    <Dialog
      open
      title={name}
      size="lg"
      onClose={onClose}
      actions={
        <>
          <a class="btn btn-secondary btn-md" href={downloadUrl} download={name}>
            <Icon name="download" size={16} />
            <span>Download</span>
          </a>
          <Button onClick={onClose}>Close</Button>
        </>
      }
    >
      {image ? (
        <img class="storage-image" src={thumbnailUrl} alt={name} />
      ) : file.data ? (
        <>
          <p class="muted">
            {formatBytes(file.data.size)} · modified {formatDateTime(file.data.modified)}
            {file.data.truncated && (
              <>
                {' '}
                · <Badge tone="warning">Truncated</Badge>
              </>
            )}
          </p>
          {file.data.truncated && (
            <p class="notice" role="status">
              <Icon name="info" /> Only the first {formatBytes(file.data.cap)} of {formatBytes(file.data.size)} are
              shown. Download the file to see all of it.
            </p>
          )}
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex lint/a11y/useSemanticElements: scrolling text, so a keyboard must reach it; named as a region */}
          <pre class="storage-preview" role="region" tabIndex={0} aria-label={`Contents of ${name}`}>
            {file.data.content}
          </pre>
        </>
      ) : file.error === undefined ? (
        <Loading label={`Reading ${name}…`} />
      ) : binary ? (
        <Empty icon="file" title="This file is not text">
          It cannot be shown here; download it to open it with an application that understands it.
        </Empty>
      ) : (
        <ErrorState title="This file cannot be shown" error={file.error} onRetry={file.reload} />
      )}
    </Dialog>
  )
}
