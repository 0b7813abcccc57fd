/** The skills list: filters in the query string, an enabled switch per row, your drafts, the sync folder. */
import { useEffect, useState } from 'preact/hooks'
import {
  Async,
  Button,
  Card,
  DataTable,
  Empty,
  formatDateTime,
  formatRelative,
  Icon,
  KeyValues,
  PageHeader,
  Select,
  TextField,
  useResource,
  type PageContext,
} from '@hostd/ui'
import { DraftExpiry, PageLink, SkillIcon, SourceBadge, Tags } from './common.tsx'
import { api, type SkillDraft, type SkillSummary, type SyncStatus } from './model.ts'

const FILTERS = ['q', 'category', 'tag', 'source'] as const
type Filters = Record<(typeof FILTERS)[number], string>

function matches(s: SkillSummary, f: Filters): boolean {
  const q = f.q.trim().toLowerCase()
  if (q && ![s.name, s.description, s.category, ...s.tags].some((t) => t.toLowerCase().includes(q))) return false
  if (f.category && s.category.toLowerCase() !== f.category.toLowerCase()) return false
  if (f.tag && !s.tags.some((t) => t.toLowerCase() === f.tag.toLowerCase())) return false
  if (f.source && s.source !== f.source) return false
  return true
}

const distinct = (values: string[]) =>
  [...new Map(values.filter(Boolean).map((v) => [v.toLowerCase(), v])).values()].sort((a, b) => a.localeCompare(b))

/** Switches a skill on or off (synced ones too): the switch moves at once and moves back if the server refuses. */
export function EnabledSwitch({ ctx, skill, done }: { ctx: PageContext; skill: SkillSummary; done: () => void }) {
  const [enabled, setEnabled] = useState(skill.enabled)
  const [busy, setBusy] = useState(false)
  useEffect(() => setEnabled(skill.enabled), [skill.enabled])
  const toggle = async (next: boolean) => {
    setEnabled(next)
    setBusy(true)
    try {
      await ctx.api.post(`${api.skill(skill.id)}/enabled`, { enabled: next })
      ctx.toast.success(`${skill.name} is ${next ? 'enabled' : 'disabled'}`)
      done()
    } catch (err) {
      setEnabled(!next)
      ctx.toast.error(err)
    } finally {
      setBusy(false)
    }
  }
  return (
    <input
      type="checkbox"
      // biome-ignore lint/a11y/useAriaPropsForRole: a native checkbox, whose checked state the browser exposes (no aria-checked)
      role="switch"
      class="switch"
      checked={enabled}
      aria-busy={busy || undefined}
      aria-label={`Enabled: ${skill.name}`}
      onChange={(e) => !busy && void toggle(e.currentTarget.checked)}
    />
  )
}

function DraftsCard({ ctx, drafts, skills }: { ctx: PageContext; drafts: SkillDraft[]; skills: SkillSummary[] }) {
  const open = drafts.filter((d) => d.publishedRevision === null)
  if (open.length === 0) return null
  return (
    <Card title="Your drafts">
      <ul class="skill-drafts">
        {open.map((d) => {
          const target = d.targetSkillId ? skills.find((s) => s.id === d.targetSkillId) : undefined
          return (
            <li key={d.id}>
              <Icon name="pencil" size={16} />
              <span class="skill-draft-name">{d.name}</span>
              <span class="muted">
                {d.targetSkillId
                  ? `edit of ${target?.name ?? 'a skill'}, based on revision ${d.baseRevision}`
                  : 'new skill'}
              </span>
              <DraftExpiry expiresAt={d.expiresAt} />
              <PageLink ctx={ctx} to={`/drafts/${d.id}`} class="btn btn-secondary btn-sm">
                Continue editing
              </PageLink>
            </li>
          )
        })}
      </ul>
    </Card>
  )
}

function SyncCard({ ctx, onRescan }: { ctx: PageContext; onRescan: () => void }) {
  const status = useResource((signal) => ctx.api.get<SyncStatus>(api.sync, { signal }), [])
  const [busy, setBusy] = useState(false)
  const rescan = async () => {
    setBusy(true)
    try {
      const s = await ctx.api.post<SyncStatus>(api.sync)
      ctx.toast.success(`Sync folder read again: ${s.skills} synced skill${s.skills === 1 ? '' : 's'}`)
      status.reload()
      onRescan()
    } catch (err) {
      ctx.toast.error(err)
    } finally {
      setBusy(false)
    }
  }
  return (
    <Card
      title="Sync folder"
      actions={
        <Button size="sm" icon="refresh" busy={busy} onClick={() => void rescan()}>
          Rescan now
        </Button>
      }
    >
      <Async resource={status} label="Reading the sync folder…">
        {(s) => (
          <div class="stack">
            <p class="muted">
              Each folder with a SKILL.md in it is a synced skill: read-only here, updated when its files change.
            </p>
            <KeyValues
              items={[
                ['Folder', <span class="mono">{s.dir}</span>],
                ['Watching', s.watching ? 'Yes, changes show within a second' : 'No (the folder is read on rescan)'],
                ['Synced skills', String(s.skills)],
              ]}
            />
            {s.errors.length > 0 && (
              <div class="notice" role="alert">
                <Icon name="triangle-alert" />
                <div>
                  <p>These folders were skipped (each keeps its last good revision):</p>
                  <ul>
                    {s.errors.map((e) => (
                      <li key={e.folder}>
                        <span class="mono">{e.folder}</span>: {e.message}
                      </li>
                    ))}
                  </ul>
                </div>
              </div>
            )}
          </div>
        )}
      </Async>
    </Card>
  )
}

export function SkillList({ ctx }: { ctx: PageContext }) {
  const search = ctx.location.value.search
  const params = new URLSearchParams(search)
  const filters = Object.fromEntries(FILTERS.map((k) => [k, params.get(k) ?? ''])) as Filters
  const skills = useResource((signal) => ctx.api.get<SkillSummary[]>(api.skills, { signal }), [])
  const drafts = useResource((signal) => ctx.api.get<SkillDraft[]>(api.drafts, { signal }), [])
  const setFilter = (name: keyof Filters, value: string) => {
    const next = new URLSearchParams(search)
    if (value) next.set(name, value)
    else next.delete(name)
    const query = next.toString()
    ctx.navigate(`${ctx.base}${query ? `?${query}` : ''}`, { replace: true })
  }
  const filtered = FILTERS.some((k) => filters[k])

  return (
    <div class="stack">
      <PageHeader
        title="Skills"
        description={
          'Local workflows: SKILL.md instructions with their supporting files, kept with every revision. ' +
          'Synced skills come from the sync folder and are read-only here.'
        }
        actions={
          <Button variant="primary" icon="plus" onClick={() => ctx.navigate(`${ctx.base}/new`)}>
            New skill
          </Button>
        }
      />
      {drafts.data && skills.data && <DraftsCard ctx={ctx} drafts={drafts.data} skills={skills.data} />}
      <Async
        resource={skills}
        label="Loading skills…"
        isEmpty={(list) => list.length === 0}
        empty={
          <Empty
            icon="sparkles"
            title="No skills yet"
            action={
              <Button variant="primary" icon="plus" onClick={() => ctx.navigate(`${ctx.base}/new`)}>
                New skill
              </Button>
            }
          >
            Write one here, or put folders with a SKILL.md into the sync folder below.
          </Empty>
        }
      >
        {(list) => {
          const rows = list.filter((s) => matches(s, filters))
          const all = (label: string) => [{ value: '', label }]
          return (
            <div class="stack">
              <search class="skill-filters" aria-label="Filter skills">
                <TextField
                  name="q"
                  label="Search"
                  type="search"
                  placeholder="Name, description, tag…"
                  value={filters.q}
                  autoComplete="off"
                  onInput={(e) => setFilter('q', e.currentTarget.value)}
                />
                <Select
                  name="category"
                  label="Category"
                  value={filters.category}
                  options={[
                    ...all('All categories'),
                    ...distinct(list.map((s) => s.category)).map((c) => ({ value: c, label: c })),
                  ]}
                  onChange={(e) => setFilter('category', e.currentTarget.value)}
                />
                <Select
                  name="tag"
                  label="Tag"
                  value={filters.tag}
                  options={[
                    ...all('All tags'),
                    ...distinct(list.flatMap((s) => s.tags)).map((t) => ({ value: t, label: t })),
                  ]}
                  onChange={(e) => setFilter('tag', e.currentTarget.value)}
                />
                <Select
                  name="source"
                  label="Source"
                  value={filters.source}
                  options={[
                    ...all('Local and synced'),
                    { value: 'local', label: 'Local' },
                    { value: 'synced', label: 'Synced' },
                  ]}
                  onChange={(e) => setFilter('source', e.currentTarget.value)}
                />
              </search>
              <p class="toolbar-status" aria-live="polite">
                {filtered
                  ? `${rows.length} of ${list.length} skills match`
                  : `${list.length} skill${list.length === 1 ? '' : 's'}`}
              </p>
              <DataTable
                caption="Skills"
                hideCaption
                rows={rows}
                rowKey={(s) => s.id}
                initialSort={{ key: 'name', direction: 'ascending' }}
                empty={
                  <Empty
                    icon="search"
                    title="No skill matches these filters"
                    action={
                      <Button onClick={() => ctx.navigate(ctx.base, { replace: true })}>Clear the filters</Button>
                    }
                  />
                }
                columns={[
                  {
                    key: 'name',
                    label: 'Name',
                    sortable: true,
                    render: (s) => (
                      <div class="skill-name-cell">
                        <SkillIcon icon={s.icon} />
                        <div>
                          <PageLink ctx={ctx} to={`/${s.id}`} class="skill-link">
                            {s.name}
                          </PageLink>
                          <p class="skill-description">{s.description}</p>
                        </div>
                      </div>
                    ),
                  },
                  {
                    key: 'category',
                    label: 'Category',
                    sortable: true,
                    secondary: true,
                    render: (s) => s.category || <span class="muted">–</span>,
                  },
                  { key: 'tags', label: 'Tags', secondary: true, render: (s) => <Tags tags={s.tags} /> },
                  {
                    key: 'source',
                    label: 'Source',
                    sortable: true,
                    secondary: true,
                    render: (s) => <SourceBadge source={s.source} />,
                  },
                  {
                    key: 'revision',
                    label: 'Revision',
                    sortable: true,
                    align: 'end',
                    secondary: true,
                    render: (s) => (
                      <span title={`version ${s.version} (every change, enable and disable included)`}>
                        {s.revision}
                      </span>
                    ),
                  },
                  {
                    key: 'updatedAt',
                    label: 'Updated',
                    sortable: true,
                    secondary: true,
                    render: (s) => (
                      <time dateTime={s.updatedAt} title={formatDateTime(s.updatedAt)}>
                        {formatRelative(s.updatedAt)}
                      </time>
                    ),
                  },
                  {
                    key: 'enabled',
                    label: 'Enabled',
                    sortable: true,
                    render: (s) => <EnabledSwitch ctx={ctx} skill={s} done={skills.reload} />,
                  },
                ]}
              />
            </div>
          )
        }}
      </Async>
      <SyncCard ctx={ctx} onRescan={skills.reload} />
    </div>
  )
}
