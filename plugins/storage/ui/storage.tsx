/**
 * The storage page (/storage): disks and volumes, network shares (mounted and exported over SMB) and, for operators,
 * the file browser. Each view has its own URL (/storage, /storage/shares, /storage/files?root=&path=).
 */
import { useCallback, useState } from 'preact/hooks'
import {
  Async,
  adoptStyles,
  Button,
  PageHeader,
  PrivilegesMissing,
  Tabs,
  defineElement,
  isPrivilegesMissing,
  useResource,
  type PageContext,
} from '@hostd/ui'
import { DisksView } from './parts/disks.tsx'
import { FilesView } from './parts/files.tsx'
import { SharesView } from './parts/shares.tsx'
import type { HelperState, Overview } from './parts/model.ts'
import css from './storage.css' with { type: 'text' }

adoptStyles('storage', css)

const VIEWS = [
  { id: 'disks', label: 'Disks and volumes', path: '' },
  { id: 'shares', label: 'Network shares', path: '/shares' },
  { id: 'files', label: 'Files', path: '/files' },
]

/**
 * Whether the root helper is there: asked once (GET /api/system/privileged, the system plugin's; when that plugin
 * is absent the page learns it from the first 423 instead), and set by any request that answers 423.
 */
function useHelper(ctx: PageContext): HelperState & { recheck: () => void } {
  const status = useResource(
    (signal) =>
      ctx.can('operator')
        ? ctx.api.get<{ helper: { available: boolean } }>('/api/system/privileged', { signal }).catch(() => null)
        : Promise.resolve(null),
    [],
  )
  const [refused, setRefused] = useState(false)
  const report = useCallback((error: unknown) => {
    if (!isPrivilegesMissing(error)) return false
    setRefused(true)
    return true
  }, [])
  const recheck = useCallback(() => {
    setRefused(false)
    status.reload()
  }, [status.reload])
  return { missing: refused || status.data?.helper.available === false, report, recheck }
}

function StoragePage({ ctx }: { ctx: PageContext }) {
  const overview = useResource((signal) => ctx.api.get<Overview>('/api/storage', { signal }), [])
  const helper = useHelper(ctx)
  const sub = ctx.location.value.path.slice(ctx.base.length)
  const views = VIEWS.filter((v) => v.id !== 'files' || ctx.can('operator'))
  const view = views.find((v) => v.path && sub.startsWith(v.path)) ?? views[0]!
  return (
    <>
      <PageHeader
        title="Storage"
        description="Disks, volumes and network shares of this server, and its files."
        actions={
          view.id !== 'files' && (
            <Button icon="refresh" onClick={overview.reload} busy={overview.loading && overview.data !== undefined}>
              Refresh
            </Button>
          )
        }
      />
      <div class="storage-stack">
        {helper.missing && ctx.can('operator') && (
          <PrivilegesMissing
            affected={
              ctx.can('admin') ? 'SMART reports, ejecting disks, mounting shares and sharing folders' : 'SMART reports'
            }
            onRetry={helper.recheck}
          />
        )}
        <Tabs
          label="Storage views"
          tabs={views}
          selected={view.id}
          onSelect={(id) => ctx.navigate(`${ctx.base}${views.find((v) => v.id === id)!.path}`)}
        >
          <Async resource={overview} label="Reading disks and volumes…">
            {(data) =>
              view.id === 'files' ? (
                <FilesView ctx={ctx} overview={data} helper={helper} />
              ) : view.id === 'shares' ? (
                <SharesView ctx={ctx} overview={data} helper={helper} reload={overview.reload} />
              ) : (
                <DisksView ctx={ctx} overview={data} helper={helper} reload={overview.reload} />
              )
            }
          </Async>
        </Tabs>
      </div>
    </>
  )
}

defineElement('storage-page', ({ ctx }) => <StoragePage ctx={ctx} />)
