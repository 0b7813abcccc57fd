import { formatBytes, adoptStyles } from '@hostd/ui'
import css from '../storage.css' with { type: 'text' }

adoptStyles('storage', css)

/** Builds an API or page URL with its query (skipping empty values). */
export function withQuery(path: string, query: Record<string, string | undefined>): string {
  const params = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, v)
  const q = params.toString()
  return q ? `${path}?${q}` : path
}

/** How full a volume is: a meter (not a progress bar: nothing is moving), red above 90 %, amber above 75 %. */
export function UsageBar({ label, used, size }: { label: string; used: number; size: number }) {
  const pct = size > 0 ? Math.min(100, (used / size) * 100) : 0
  const tone = pct >= 90 ? 'danger' : pct >= 75 ? 'warning' : 'accent'
  const text = `${formatBytes(used)} of ${formatBytes(size)} used (${Math.round(pct)} %)`
  return (
    <div class="storage-usage">
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
