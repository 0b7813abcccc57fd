import { formatBytes, pageStyles } from '@hostd/ui'

pageStyles('storage', `
.storage-stack { display: grid; gap: var(--space-4); grid-template-columns: minmax(0, 1fr); }
.storage-usage { display: grid; gap: 4px; min-width: 9rem; }
.storage-usage-text { font-size: var(--text-sm); color: var(--text-muted); font-variant-numeric: tabular-nums; }
.storage-crumbs ol { display: flex; flex-wrap: wrap; align-items: center; gap: var(--space-1); list-style: none; margin: 0; padding: 0; }
.storage-crumbs li { display: inline-flex; align-items: center; gap: var(--space-1); }
.storage-crumbs li + li::before { content: '/'; color: var(--text-muted); }
.storage-crumbs a { text-decoration: none; font-weight: 550; }
.storage-crumbs a:hover { text-decoration: underline; }
.storage-crumbs [aria-current] { font-weight: 650; }
.storage-name { display: inline-flex; align-items: center; gap: var(--space-2); font-weight: 550; overflow-wrap: anywhere; }
.storage-name a { text-decoration: none; color: var(--text); }
.storage-name a:hover { text-decoration: underline; color: var(--accent-text); }
.storage-name .icon { color: var(--text-muted); }
.storage-name .icon.folder { color: var(--accent); }
.storage-preview { margin: 0; max-height: 60vh; overflow: auto; padding: var(--space-3); border-radius: var(--radius-sm); background: var(--surface-2);
  font-family: var(--font-mono); font-size: var(--text-sm); line-height: 1.45; white-space: pre-wrap; overflow-wrap: anywhere; }
.storage-uploads { list-style: none; margin: 0; padding: 0; display: grid; gap: var(--space-3); }
.storage-uploads li { display: flex; gap: var(--space-3); align-items: flex-end; }
.storage-uploads .progress { flex: 1; }
.storage-sub { display: block; color: var(--text-muted); font-size: var(--text-sm); font-weight: 400; }
.storage-badges { display: inline-flex; flex-wrap: wrap; gap: var(--space-1); }
.storage-parts { margin: 0; padding: 0; list-style: none; font-size: var(--text-sm); color: var(--text-muted); }
.storage-smart-head { display: flex; flex-wrap: wrap; gap: var(--space-3); align-items: center; }
.storage-files-bar { display: flex; flex-wrap: wrap; justify-content: space-between; align-items: center; gap: var(--space-3); }
.storage-files-bar .field { min-width: 10rem; }
.storage-center { text-align: center; }
`)

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
      <div class={`progress-track tone-${tone}`} role="meter" aria-label={label} aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(pct)} aria-valuetext={text}>
        <div class="progress-fill" style={{ width: `${pct}%` }} />
      </div>
      <span class="storage-usage-text">{text}</span>
    </div>
  )
}
