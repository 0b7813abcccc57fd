/**
 * The overview's storage card: each mounted filesystem that holds data, with its capacity, used and free space and a
 * meter, the share used computed as `df` does (common.tsx: used / (used + free to users)).
 */
import { Async, adoptStyles, defineElement, Empty, formatBytes, useResource, type PageContext } from '@hostd/ui'
import { UsageBar } from './parts/common.tsx'
import type { Overview, Volume } from './parts/model.ts'
import css from './storage.css' with { type: 'text' }

adoptStyles('storage', css)

/** The fullest first: what to look at is on top. */
const fullness = (v: Volume) => v.used / Math.max(1, v.used + v.free)

/**
 * One row per filesystem: a device mounted at several places (bind mounts, a container's view of a folder) is shown
 * once, at its shortest mount point, with how many others it has.
 */
function filesystems(volumes: Volume[]): (Volume & { others: number })[] {
  const byDevice = new Map<string, Volume[]>()
  for (const v of volumes) byDevice.set(v.device, [...(byDevice.get(v.device) ?? []), v])
  return [...byDevice.values()]
    .map((same) => {
      const first = [...same].sort((a, b) => a.mountpoint.length - b.mountpoint.length)[0]!
      return { ...first, others: same.length - 1 }
    })
    .sort((a, b) => fullness(b) - fullness(a))
}

function StorageCard({ ctx }: { ctx: PageContext }) {
  const data = useResource((signal) => ctx.api.get<Overview>('/api/storage', { signal }), [])
  return (
    <Async resource={data} label="Reading filesystems…">
      {(o) =>
        o.volumes.length === 0 ? (
          <Empty icon="hard-drive" title="No filesystems with data are mounted" />
        ) : (
          <ul class="storage-card" aria-label="Filesystems">
            {filesystems(o.volumes).map((v) => (
              <li key={`${v.device} ${v.mountpoint}`}>
                <div class="storage-card-head" title={v.device}>
                  <span>
                    <strong class="mono">{v.mountpoint}</strong>
                    {v.others > 0 && (
                      <span class="muted">
                        {' '}
                        and {v.others} more mount point{v.others > 1 ? 's' : ''}
                      </span>
                    )}
                  </span>
                  <span class="muted storage-size">
                    {formatBytes(v.size)} · {v.fstype}
                  </span>
                </div>
                <UsageBar label={`Storage used on ${v.mountpoint}`} used={v.used} free={v.free} />
              </li>
            ))}
          </ul>
        )
      }
    </Async>
  )
}

defineElement('storage-card', ({ ctx }) => <StorageCard ctx={ctx} />)
