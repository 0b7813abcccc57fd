/**
 * The file browser: one URL per folder (/storage/files?root=&path=, and &preview=<name> for a file's preview), so
 * reload and back work. Operators list, preview and download; admins also upload (drop or pick files, one progress
 * bar each) and share the folder over SMB.
 */
import { useRef, useState } from 'preact/hooks'
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
  errorMessage,
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
  type Listing,
  type Overview,
  type Preview,
  type Uploaded,
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

function Folder({ ctx, roots, root, path, preview, helper }: FolderProps) {
  const listing = useResource(
    (signal) => ctx.api.get<Listing>(withQuery('/api/storage/fs/list', { root: root.name, path }), { signal }),
    [root.name, path],
  )
  const [uploads, setUploads] = useState<Upload[]>([])
  const [sharing, setSharing] = useState(false)
  const queue = useRef<Promise<void>>(Promise.resolve())
  const admin = ctx.can('admin')

  const folderUrl = (rootName: string, p: string) => withQuery(`${ctx.base}/files`, { root: rootName, path: p })
  const previewUrl = (name: string) => withQuery(`${ctx.base}/files`, { root: root.name, path, preview: name })
  const downloadUrl = (name: string) =>
    withQuery('/api/storage/fs/download', { root: root.name, path: join(path, name) })
  const where = path ? `${root.name}/${path}` : root.name

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
        <div class="row-actions">
          {roots.length > 1 && (
            <Select
              name="root"
              label="File root"
              value={root.name}
              options={roots.map((r) => ({ value: r.name, label: r.name }))}
              onChange={(e) => ctx.navigate(folderUrl(e.currentTarget.value, ''))}
            />
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
          Drop files here to upload them to <strong>{where}</strong>, or
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
          {(l) => (
            <>
              {l.truncated && (
                <p class="notice" role="status">
                  <Icon name="info" /> This folder holds more than 10 000 entries; only the first 10 000 are listed.
                </p>
              )}
              <DataTable
                caption={`Contents of ${where}`}
                hideCaption
                rows={l.entries}
                rowKey={(e) => e.name}
                initialSort={{ key: 'name', direction: 'ascending' }}
                empty={
                  <Empty icon="folder" title="This folder is empty">
                    {admin ? 'Drop files above to upload them here.' : undefined}
                  </Empty>
                }
                columns={[
                  {
                    key: 'name',
                    label: 'Name',
                    sortValue: (e) => `${e.type === 'directory' ? 0 : 1}${e.name.toLowerCase()}`,
                    render: (e) => (
                      <span class="storage-name">
                        <Icon
                          name={e.type === 'directory' ? 'folder' : e.type === 'file' ? 'file-text' : 'file'}
                          class={e.type === 'directory' ? 'folder' : undefined}
                        />
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
                    render: (e) => (e.type === 'directory' ? <span class="muted">–</span> : formatBytes(e.size)),
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
                    render: (e) =>
                      e.type === 'directory' ? null : (
                        <div class="row-actions">
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
                        </div>
                      ),
                  },
                ]}
              />
            </>
          )}
        </Async>
      )}

      {preview && (
        <PreviewDialog
          ctx={ctx}
          root={root}
          path={join(path, preview)}
          name={preview}
          downloadUrl={downloadUrl(preview)}
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
  onClose: () => void
}

/** A text file's first 64 KiB; says when it is cut, and what to do with a file that is not text. */
function PreviewDialog({ ctx, root, path, name, downloadUrl, onClose }: PreviewProps) {
  const file = useResource(
    (signal) => ctx.api.get<Preview>(withQuery('/api/storage/fs/read', { root: root.name, path }), { signal }),
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
      {file.data ? (
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
