import { useState } from 'preact/hooks'
import { Button } from '../kit/button.tsx'
import { confirm } from '../kit/dialog.tsx'
import { Async, Badge, Empty } from '../kit/feedback.tsx'
import { useResource } from '../kit/resource.ts'
import { Form, TextField } from '../kit/form.tsx'
import { formatDateTime } from '../kit/format.ts'
import { Card, PageHeader, Tabs } from '../kit/layout.tsx'
import { DataTable } from '../kit/table.tsx'
import { toast } from '../kit/toast.tsx'
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

/** Shown apart (the result's count), not in the detail text. */
const REPEAT_KEYS = new Set(['count', 'lastAt'])

function detailText(detail: Entry['detail']): string {
  if (!detail) return ''
  return Object.entries(detail)
    .filter(([k, v]) => v !== null && v !== undefined && !REPEAT_KEYS.has(k))
    .map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
    .join(', ')
}

/** The result; a failure repeated within the throttle's window is one entry with a count (docs/API.md, "Audit"). */
function Result({ entry }: { entry: Entry }) {
  const count = typeof entry.detail?.count === 'number' ? entry.detail.count : 1
  const lastAt = typeof entry.detail?.lastAt === 'string' ? entry.detail.lastAt : null
  return (
    <span title={count > 1 && lastAt ? `${count} times, the last at ${formatDateTime(lastAt)}` : undefined}>
      <Badge tone={entry.result === 'success' ? 'success' : 'danger'}>
        {count > 1 ? `${entry.result} ×${count}` : entry.result}
      </Badge>
    </span>
  )
}

interface Retention {
  maxAgeDays: number
  maxRows: number
}

/** How long the log keeps records. Shortening it removes what it no longer keeps at once, so it asks first. */
function RetentionCard({ onChanged }: { onChanged: () => void }) {
  const retention = useResource((signal) => api.get<Retention>('/api/audit/retention', { signal }), [])
  const [generation, setGeneration] = useState(0)
  return (
    <Card title="Retention" class="section-gap">
      <Async resource={retention} label="Loading the retention…">
        {(r) => (
          <Form
            key={`${generation}-${r.maxAgeDays}-${r.maxRows}`}
            label="Audit retention"
            submitLabel="Save retention"
            onSubmit={async (v) => {
              const next = { maxAgeDays: Number(v.maxAgeDays), maxRows: Number(v.maxRows) }
              const shorter = next.maxAgeDays < r.maxAgeDays || next.maxRows < r.maxRows
              if (
                shorter &&
                !(await confirm({
                  title: 'Shorten the audit log?',
                  message:
                    `Records older than ${next.maxAgeDays} days, and the oldest beyond ` +
                    `${next.maxRows.toLocaleString()}, are removed now. This cannot be undone.`,
                  confirmLabel: 'Shorten the log',
                  danger: true,
                }))
              )
                return
              await api.put('/api/audit/retention', next)
              toast.success(`Records are kept for ${next.maxAgeDays} days, at most ${next.maxRows.toLocaleString()}.`)
              setGeneration((g) => g + 1)
              retention.reload()
              onChanged()
            }}
          >
            <p class="muted">
              Older records, and the oldest beyond the count, are removed every hour. Lowering either removes them at
              once.
            </p>
            <TextField
              name="maxAgeDays"
              label="Keep records for (days)"
              type="number"
              required
              min={1}
              max={3650}
              defaultValue={String(r.maxAgeDays)}
            />
            <TextField
              name="maxRows"
              label="Keep at most (records)"
              type="number"
              required
              min={1000}
              max={10000000}
              step={1}
              defaultValue={String(r.maxRows)}
            />
          </Form>
        )}
      </Async>
    </Card>
  )
}

/**
 * The audit log, newest first. Range, page number and the page's key live in the URL (?range=7d&page=3&before=1234:
 * the records older than id 1234), so reload and back keep them; the server pages by key, which answers as fast on
 * the last page of a million records as on the first.
 */
export default function AuditPage() {
  const params = new URLSearchParams(route.value.search)
  const range = RANGES.some((r) => r.id === params.get('range')) ? params.get('range')! : '7d'
  const page = Math.max(1, Number.parseInt(params.get('page') ?? '1', 10) || 1)
  const key = (name: string) => {
    const v = Number.parseInt(params.get(name) ?? '', 10)
    return page > 1 && Number.isSafeInteger(v) && v >= 0 ? v : undefined
  }
  const before = key('before')
  const after = before === undefined ? key('after') : undefined
  const cursor = before !== undefined ? `&before=${before}` : after !== undefined ? `&after=${after}` : ''
  const entries = useResource(
    (signal) =>
      api.get<{ items: Entry[]; total: number }>(`/api/audit?range=${range}&limit=${PAGE}${cursor}`, { signal }),
    [range, page, cursor],
  )
  const go = (r: string, p: number, by = '') => navigate(`/audit?range=${r}${p > 1 ? `&page=${p}${by}` : ''}`)
  return (
    <>
      <PageHeader
        title="Audit log"
        description="Sign-ins, user changes, plugin changes and every change to the host: who, from where, and when."
        actions={
          <Button icon="refresh" onClick={entries.reload} busy={entries.loading && entries.data !== undefined}>
            Refresh
          </Button>
        }
      />
      <Tabs label="Time range" tabs={RANGES} selected={range} onSelect={(r) => go(r, 1)}>
        <Async
          resource={entries}
          label="Loading the audit log…"
          isEmpty={(d) => d.total === 0}
          empty={<Empty icon="scroll-text" title="Nothing recorded in this range" />}
        >
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
                    {
                      key: 'time',
                      label: 'Time',
                      sortable: true,
                      render: (e) => (
                        <time class="nowrap" dateTime={e.time}>
                          {formatDateTime(e.time)}
                        </time>
                      ),
                    },
                    {
                      key: 'username',
                      label: 'User',
                      sortable: true,
                      render: (e) => e.username ?? <span class="muted">system</span>,
                    },
                    {
                      key: 'action',
                      label: 'Action',
                      sortable: true,
                      primary: true,
                      render: (e) => <code>{e.action}</code>,
                    },
                    { key: 'target', label: 'Target', sortable: true },
                    {
                      key: 'result',
                      label: 'Result',
                      sortable: true,
                      actions: true,
                      render: (e) => <Result entry={e} />,
                    },
                    { key: 'ip', label: 'Address', secondary: true },
                    {
                      key: 'detail',
                      label: 'Detail',
                      secondary: true,
                      render: (e) => (detailText(e.detail) ? <span class="detail">{detailText(e.detail)}</span> : null),
                    },
                  ]}
                />
                <nav class="pager" aria-label="Audit pages">
                  <span class="pager-range" aria-live="polite">
                    {first.toLocaleString()}–{last.toLocaleString()} of {total.toLocaleString()}
                  </span>
                  <Button
                    size="sm"
                    icon="arrow-up"
                    disabled={page <= 1}
                    onClick={() => go(range, page - 1, items.length ? `&after=${items[0]!.id}` : '')}
                  >
                    Newer
                  </Button>
                  <Button
                    size="sm"
                    icon="arrow-down"
                    disabled={last >= total || items.length < PAGE}
                    onClick={() => go(range, page + 1, `&before=${items[items.length - 1]!.id}`)}
                  >
                    Older
                  </Button>
                </nav>
              </>
            )
          }}
        </Async>
      </Tabs>
      <RetentionCard onChanged={entries.reload} />
    </>
  )
}
