/** Components more than one storage view shows. */
import { formatBytes } from '@hostd/ui'

/**
 * How full a volume is, as `df` says it: used / (used + free to users). The blocks the file system reserves (for root,
 * or that a thin or quota'd disk cannot give) count as neither, so a volume whose users can write no more reads 100 %.
 */
export function usedPercent(used: number, free: number): number {
  return used + free > 0 ? Math.min(100, (used / (used + free)) * 100) : 0
}

/** How full a volume is: a meter (not a progress bar: nothing is moving), red above 90 %, amber above 75 %. */
export function UsageBar({ label, used, free }: { label: string; used: number; free: number }) {
  const pct = usedPercent(used, free)
  const tone = pct >= 90 ? 'danger' : pct >= 75 ? 'warning' : 'accent'
  const text = `${formatBytes(used)} used, ${formatBytes(free)} free (${Math.round(pct)} %)`
  return (
    <div class="storage-usage">
      {/* biome-ignore lint/a11y/useSemanticElements: drawn as the kit's progress track (a fill in a track), which a <meter> cannot hold */}
      <div
        class={`progress-track tone-${tone}`}
        role="meter"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={Math.round(pct)}
        aria-valuetext={text}
      >
        <div class="progress-fill" style={{ width: `${pct}%` }} />
      </div>
      <span class="storage-usage-text">{text}</span>
    </div>
  )
}
