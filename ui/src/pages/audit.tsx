import { Button } from '../kit/button.tsx'
import { Async, Badge, Empty, useResource } from '../kit/feedback.tsx'
import { formatDateTime } from '../kit/format.ts'
import { PageHeader, Tabs } from '../kit/layout.tsx'
import { DataTable } from '../kit/table.tsx'
import { navigate, route } from '../shell/router.ts'
import { api } from '../shell/session.ts'

interface Entry {
  id: number
  time: string
  username: string | null
  ip: string | null
  action: string
  target: string | null
  result: string
  detail: Record<string, unknown> | null
}

const RANGES = [
  { id: '24h', label: 'Last 24 hours' },
  { id: '7d', label: 'Last 7 days' },
  { id: '30d', label: 'Last 30 days' },
  { id: 'all', label: 'All' },
]
const PAGE = 50

function detailText(detail: Entry['detail']): string {
  if (!detail) return ''
  return Object.entries(detail)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
    .join(', ')
}

/** The audit log, newest first; range and page live in the URL (?range=7d&page=2), so reload and back keep them. */
export default function AuditPage() {
  const params = new URLSearchParams(route.value.search)
  const range = RANGES.some((r) => r.id === params.get('range')) ? params.get('range')! : '7d'
  const page = Math.max(1, Number.parseInt(params.get('page') ?? '1', 10) || 1)
  const entries = useResource((signal) => api.get<{ items: Entry[]; total: number }>(`/api/audit?range=${range}&limit=${PAGE}&offset=${(page - 1) * PAGE}`, { signal }), [range, page])
  const go = (r: string, p: number) => navigate(`/audit?range=${r}${p > 1 ? `&page=${p}` : ''}`)
  return (
    <>
      <PageHeader title="Audit log" description="Sign-ins, user changes, plugin changes and every change to the host: who, from where, and when." actions={<Button icon="refresh" onClick={entries.reload} busy={entries.loading && entries.data !== undefined}>Refresh</Button>} />
      <Tabs label="Time range" tabs={RANGES} selected={range} onSelect={(r) => go(r, 1)}>
        <Async resource={entries} label="Loading the audit log…" isEmpty={(d) => d.total === 0} empty={<Empty icon="scroll-text" title="Nothing recorded in this range" />}>
          {({ items, total }) => {
            const first = (page - 1) * PAGE + 1
            const last = Math.min(total, first + items.length - 1)
            return (
              <>
                <DataTable
                  caption={`Audit entries, ${RANGES.find((r) => r.id === range)!.label.toLowerCase()}`}
                  hideCaption
                  rows={items}
                  rowKey={(e) => e.id}
                  columns={[
                    { key: 'time', label: 'Time', sortable: true, render: (e) => <time dateTime={e.time}>{formatDateTime(e.time)}</time> },
                    { key: 'username', label: 'User', sortable: true, render: (e) => e.username ?? <span class="muted">system</span> },
                    { key: 'action', label: 'Action', sortable: true, render: (e) => <code>{e.action}</code> },
                    { key: 'target', label: 'Target', sortable: true },
                    { key: 'result', label: 'Result', sortable: true, render: (e) => <Badge tone={e.result === 'success' ? 'success' : 'danger'}>{e.result}</Badge> },
                    { key: 'ip', label: 'Address', secondary: true },
                    { key: 'detail', label: 'Detail', secondary: true, render: (e) => <span class="detail">{detailText(e.detail)}</span> },
                  ]}
                />
                <nav class="pager" aria-label="Audit pages">
                  <span aria-live="polite">
                    {first}–{last} of {total}
                  </span>
                  <Button size="sm" icon="arrow-up" disabled={page <= 1} onClick={() => go(range, page - 1)}>
                    Newer
                  </Button>
                  <Button size="sm" icon="arrow-down" disabled={last >= total} onClick={() => go(range, page + 1)}>
                    Older
                  </Button>
                </nav>
              </>
            )
          }}
        </Async>
      </Tabs>
    </>
  )
}
