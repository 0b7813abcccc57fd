/**
 * Images: pull by reference (the pull route answers when the pull is done, so the bar is indeterminate with the
 * time elapsed), one row per reference with its size and whether a container uses it, delete with a confirmation.
 */
import { useState } from 'preact/hooks'
import {
  Async,
  Badge,
  Button,
  Card,
  Checkbox,
  DataTable,
  Dialog,
  Empty,
  Form,
  ProgressBar,
  TextField,
  formatBytes,
  formatRelative,
  useResource,
  type PageContext,
} from '@hostd/ui'
import { Elapsed, EngineUnavailable } from './common.tsx'
import { shortId, type EngineStatus, type ImageItem } from './model.ts'

/** One row per reference (`repo:tag`), as `docker images` lists them; an image without tags is shown by its id. */
interface ImageRow {
  key: string
  reference: string
  /** The reference to delete with: the tag, or the id for an untagged image. */
  deleteRef: string
  tagged: boolean
  image: ImageItem
}

function rowsOf(images: ImageItem[]): ImageRow[] {
  return images.flatMap((image): ImageRow[] => {
    const tags = image.repoTags.filter((t) => t !== '<none>:<none>')
    if (tags.length === 0) {
      const repo = image.repoDigests[0]?.split('@')[0]
      return [
        { key: image.id, reference: repo ? `${repo} (untagged)` : '<none>', deleteRef: image.id, tagged: false, image },
      ]
    }
    return tags.map((tag) => ({ key: `${image.id}|${tag}`, reference: tag, deleteRef: tag, tagged: true, image }))
  })
}

function DeleteImage({
  ctx,
  row,
  onClose,
  onDeleted,
}: {
  ctx: PageContext
  row: ImageRow
  onClose: () => void
  onDeleted: () => void
}) {
  const otherTags = row.image.repoTags.filter((t) => t !== row.reference && t !== '<none>:<none>').length
  const used = row.image.containers > 0
  return (
    <Dialog open title={`Delete ${row.reference}?`} onClose={onClose}>
      <Form
        submitLabel="Delete image"
        actions={<Button onClick={onClose}>Cancel</Button>}
        errorFields={{ HOSTD_CONTAINERS_IN_USE: 'force', HOSTD_CONTAINERS_CONFLICT: 'force' }}
        onSubmit={async (v) => {
          const out = await ctx.api.post<{ deleted: string[]; untagged: string[] }>('/api/images/delete', {
            reference: row.deleteRef,
            ...(v.force === true ? { force: true } : {}),
          })
          ctx.toast.success(
            out.deleted.length
              ? `${row.reference} was deleted (${formatBytes(row.image.size)} freed)`
              : `${row.reference} was untagged`,
          )
          onDeleted()
        }}
      >
        <p class="dialog-text">
          {otherTags > 0
            ? `Only this name is removed: the image stays for its ${otherTags} other tag${otherTags === 1 ? '' : 's'}.`
            : `The image (${formatBytes(row.image.size)}) is removed from this host. It can be pulled again later.`}
        </p>
        {used && (
          <Checkbox
            name="force"
            label="Delete even though a container uses it"
            hint={
              `${row.image.containers} container${row.image.containers === 1 ? ' uses' : 's use'} this image; ` +
              'they keep running, but cannot be recreated from it.'
            }
          />
        )}
      </Form>
    </Dialog>
  )
}

function PullForm({ ctx, onPulled }: { ctx: PageContext; onPulled: () => void }) {
  const [pulling, setPulling] = useState<{ reference: string; since: number } | null>(null)
  return (
    <Card title="Pull an image" class="ctr-pull">
      <Form
        label="Pull an image"
        submitLabel="Pull"
        errorFields={{
          HOSTD_CONTAINERS_IMAGE_REFERENCE_INVALID: 'reference',
          HOSTD_CONTAINERS_PULL_FAILED: 'reference',
          HOSTD_CONTAINERS_IMAGE_NOT_FOUND: 'reference',
          HOSTD_REQUEST_INVALID: 'reference',
        }}
        onSubmit={async (v) => {
          const reference = String(v.reference).trim()
          setPulling({ reference, since: Date.now() })
          try {
            const out = await ctx.api.post<{ reference: string; id: string; digest: string }>('/api/images/pull', {
              reference,
            })
            ctx.toast.success(`Pulled ${out.reference}${out.digest ? ` (${out.digest.slice(0, 19)}…)` : ''}`)
            onPulled()
          } finally {
            setPulling(null)
          }
        }}
      >
        <TextField
          name="reference"
          label="Image reference"
          required
          maxLength={1024}
          autoComplete="off"
          spellcheck={false}
          placeholder="nginx:1.27"
          hint="A name with its tag, e.g. nginx:1.27 or registry.example.com/team/app:2 (the tag defaults to latest)."
        />
      </Form>
      {pulling && (
        <div class="ctr-pulling" role="status">
          <ProgressBar label={`Pulling ${pulling.reference}`} detail={undefined} />
          <span class="detail">
            The engine is downloading it: <Elapsed since={pulling.since} /> so far.
          </span>
        </div>
      )}
    </Card>
  )
}

export function ImagesView({ ctx }: { ctx: PageContext }) {
  const images = useResource(
    (signal) => ctx.api.get<{ engine: EngineStatus; items: ImageItem[] }>('/api/images', { signal }),
    [],
  )
  const [deleting, setDeleting] = useState<ImageRow | null>(null)
  const operator = ctx.can('operator')
  return (
    <Async resource={images} label="Loading images…">
      {(data) => {
        if (!data.engine.available) return <EngineUnavailable engine={data.engine} onRetry={images.reload} />
        const rows = rowsOf(data.items)
        const total = data.items.reduce((sum, i) => sum + i.size, 0)
        return (
          <div class="stack">
            {operator && <PullForm ctx={ctx} onPulled={images.reload} />}
            <div class="toolbar">
              <span class="toolbar-status" aria-live="polite">
                {data.items.length} image{data.items.length === 1 ? '' : 's'}, {formatBytes(total)} in all
              </span>
              <Button icon="refresh" onClick={images.reload}>
                Refresh
              </Button>
            </div>
            <DataTable
              caption="Images"
              hideCaption
              rows={rows}
              rowKey={(r) => r.key}
              initialSort={{ key: 'reference', direction: 'ascending' }}
              empty={
                <Empty icon="image" title="No images on this host">
                  {operator
                    ? 'Pull one above, or run a container: its image is pulled when missing.'
                    : 'An operator can pull images.'}
                </Empty>
              }
              columns={[
                {
                  key: 'reference',
                  label: 'Image',
                  sortable: true,
                  render: (r) => <span class={r.tagged ? 'mono cell-strong' : 'mono muted'}>{r.reference}</span>,
                },
                {
                  key: 'id',
                  label: 'Id',
                  secondary: true,
                  render: (r) => <code title={r.image.id}>{shortId(r.image.id)}</code>,
                },
                {
                  key: 'size',
                  label: 'Size',
                  align: 'end',
                  sortValue: (r) => r.image.size,
                  render: (r) => formatBytes(r.image.size),
                },
                {
                  key: 'created',
                  label: 'Created',
                  secondary: true,
                  sortValue: (r) => r.image.createdAt,
                  render: (r) => (
                    <time dateTime={r.image.createdAt} title={r.image.createdAt}>
                      {formatRelative(r.image.createdAt)}
                    </time>
                  ),
                },
                {
                  key: 'used',
                  label: 'In use',
                  sortValue: (r) => r.image.containers,
                  render: (r) =>
                    r.image.containers > 0 ? (
                      <Badge tone="accent">{`${r.image.containers} container${r.image.containers === 1 ? '' : 's'}`}</Badge>
                    ) : (
                      <span class="muted">unused</span>
                    ),
                },
                ...(operator
                  ? [
                      {
                        key: 'actions',
                        label: 'Actions',
                        align: 'end' as const,
                        render: (r: ImageRow) => (
                          <Button
                            size="sm"
                            variant="ghost"
                            icon="trash"
                            aria-label={`Delete ${r.reference}`}
                            onClick={() => setDeleting(r)}
                          >
                            Delete
                          </Button>
                        ),
                      },
                    ]
                  : []),
              ]}
            />
            {deleting && (
              <DeleteImage
                ctx={ctx}
                row={deleting}
                onClose={() => setDeleting(null)}
                onDeleted={() => {
                  setDeleting(null)
                  images.reload()
                }}
              />
            )}
          </div>
        )
      }}
    </Async>
  )
}
