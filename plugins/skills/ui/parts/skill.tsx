/**
 * One skill (`/skills/<id>`, tabs in `?tab=`): its instructions, files and revisions, with edit (through a
 * draft), duplicate, export, enable and delete; and one old revision (`/skills/<id>/revisions/<n>`) with restore.
 * Synced skills are read-only: edit is disabled with the reason and duplicate is offered instead.
 */
import { useState } from 'preact/hooks'
import {
  Async,
  Badge,
  Button,
  DataTable,
  ErrorState,
  formatBytes,
  formatDateTime,
  formatRelative,
  Icon,
  KeyValues,
  Loading,
  PageHeader,
  Tabs,
  useResource,
  type PageContext,
} from '@hostd/ui'
import { DraftExpiry, EnabledBadge, FileList, Instructions, PageLink, SkillIcon, SourceBadge, Tags } from './common.tsx'
import { EnabledSwitch } from './list.tsx'
import { api, createDraft, pendingDraftOf, type RevisionInfo, type SkillDetail, type SkillDraft } from './model.ts'

const TABS = [
  { id: 'instructions', label: 'Instructions' },
  { id: 'files', label: 'Files' },
  { id: 'revisions', label: 'Revisions' },
]

const ORIGIN: Record<string, string> = {
  create: 'created',
  update: 'replaced',
  restore: 'restored',
  duplicate: 'duplicated',
  draft: 'published from a draft',
  sync: 'synced',
}

function Revisions({ ctx, skillId, current }: { ctx: PageContext; skillId: string; current: number }) {
  const revisions = useResource(
    (signal) => ctx.api.get<RevisionInfo[]>(api.revisions(skillId), { signal }),
    [skillId, current],
  )
  return (
    <Async resource={revisions} label="Loading revisions…">
      {(list) => (
        <DataTable
          caption="Revisions"
          hideCaption
          rows={list}
          rowKey={(r) => r.revision}
          initialSort={{ key: 'revision', direction: 'descending' }}
          columns={[
            {
              key: 'revision',
              label: 'Revision',
              sortable: true,
              render: (r) => (
                <span class="cell-strong">
                  <PageLink ctx={ctx} to={`/${skillId}/revisions/${r.revision}`}>
                    Revision {r.revision}
                  </PageLink>
                  {r.revision === current && <Badge tone="accent">current</Badge>}
                </span>
              ),
            },
            { key: 'name', label: 'Name', sortable: true, secondary: true },
            { key: 'origin', label: 'Change', sortable: true, render: (r) => ORIGIN[r.origin] ?? r.origin },
            { key: 'files', label: 'Files', sortable: true, align: 'end', secondary: true },
            {
              key: 'size',
              label: 'Size',
              sortable: true,
              align: 'end',
              secondary: true,
              render: (r) => formatBytes(r.size),
            },
            {
              key: 'createdAt',
              label: 'When',
              sortable: true,
              render: (r) => (
                <time dateTime={r.createdAt} title={formatDateTime(r.createdAt)}>
                  {formatRelative(r.createdAt)}
                </time>
              ),
            },
            {
              key: 'createdBy',
              label: 'By',
              sortable: true,
              secondary: true,
              render: (r) => r.createdBy ?? <span class="muted">sync</span>,
            },
          ]}
        />
      )}
    </Async>
  )
}

function SkillFacts({ detail }: { detail: SkillDetail }) {
  const s = detail.skill
  return (
    <KeyValues
      items={[
        ['Source', <SourceBadge source={s.source} />],
        ['Status', <EnabledBadge enabled={s.enabled} />],
        ['Category', s.category || '–'],
        ['Tags', <Tags tags={s.tags} />],
        ['Revision', `${s.revision} (version ${s.version})`],
        ['Updated', <time dateTime={s.updatedAt}>{formatDateTime(s.updatedAt)}</time>],
      ]}
    />
  )
}

export function SkillPage({ ctx, id }: { ctx: PageContext; id: string }) {
  const params = new URLSearchParams(ctx.location.value.search)
  const tab = TABS.some((t) => t.id === params.get('tab')) ? params.get('tab')! : 'instructions'
  const detail = useResource((signal) => ctx.api.get<SkillDetail>(api.skill(id), { signal }), [id])
  const drafts = useResource((signal) => ctx.api.get<SkillDraft[]>(api.drafts, { signal }), [id])
  const [busy, setBusy] = useState<string | null>(null)

  const run = async (what: string, work: () => Promise<void>) => {
    setBusy(what)
    try {
      await work()
    } catch (err) {
      ctx.toast.error(err)
    } finally {
      setBusy(null)
    }
  }

  if (detail.data === undefined) {
    if (detail.error !== undefined) {
      return (
        <div class="stack">
          <PageHeader title="Skill" />
          <ErrorState title="This skill could not be loaded" error={detail.error} onRetry={detail.reload} />
          <p>
            <PageLink ctx={ctx} to="">
              Back to all skills
            </PageLink>
          </p>
        </div>
      )
    }
    return <Loading label="Loading the skill…" />
  }
  const d = detail.data
  const s = d.skill
  const synced = s.source === 'synced'
  const draft = drafts.data ? pendingDraftOf(drafts.data, id) : undefined

  const edit = () =>
    run('edit', async () => {
      // Continue your draft of this skill if there is one; otherwise start one from the current revision.
      const target =
        draft ?? (await createDraft(ctx, { body: d.markdown, targetSkillId: id, baseRevision: s.revision }))
      ctx.navigate(`${ctx.base}/drafts/${target.id}`)
    })
  const duplicate = () =>
    run('duplicate', async () => {
      const copy = await ctx.api.post<SkillDetail>(`${api.skill(id)}/duplicate`)
      ctx.toast.success(`Copied as “${copy.skill.name}”, a local skill you can edit`)
      ctx.navigate(`${ctx.base}/${copy.skill.id}`)
    })
  const remove = () =>
    run('delete', async () => {
      const ok = await ctx.confirm({
        title: `Delete ${s.name}?`,
        message: `The skill and all its ${s.revision} revision${s.revision === 1 ? '' : 's'} are deleted. This cannot be undone.`,
        confirmLabel: 'Delete skill',
        danger: true,
      })
      if (!ok) return
      await ctx.api.delete(api.skill(id))
      ctx.toast.success(`${s.name} was deleted`)
      ctx.navigate(ctx.base)
    })

  return (
    <div class="stack">
      <nav aria-label="Breadcrumb" class="skill-crumbs">
        <PageLink ctx={ctx} to="">
          Skills
        </PageLink>{' '}
        <span aria-hidden="true">/</span> <span>{s.name}</span>
      </nav>
      <PageHeader
        title={s.name}
        description={s.description}
        actions={
          <>
            <Button
              variant="primary"
              icon="pencil"
              disabled={synced}
              busy={busy === 'edit'}
              onClick={() => void edit()}
              aria-describedby={synced ? 'skill-read-only' : undefined}
            >
              {draft ? 'Continue editing' : 'Edit'}
            </Button>
            <Button icon="copy" busy={busy === 'duplicate'} onClick={() => void duplicate()}>
              Duplicate
            </Button>
            <a class="btn btn-secondary btn-md" href={api.exportZip(id)} download>
              <Icon name="download" size={16} />
              <span>Export zip</span>
            </a>
            {!synced && (
              <Button variant="ghost" icon="trash" busy={busy === 'delete'} onClick={() => void remove()}>
                Delete
              </Button>
            )}
          </>
        }
      />
      {synced && (
        <div class="notice skill-read-only" id="skill-read-only">
          <Icon name="lock" />
          <p>
            Synced from the sync folder, so it is read-only here: change its files in that folder (they are picked up
            within a second), or duplicate it to edit a local copy. Enabling and disabling still work.
          </p>
          <Button size="sm" icon="copy" busy={busy === 'duplicate'} onClick={() => void duplicate()}>
            Duplicate to edit
          </Button>
        </div>
      )}
      {draft && (
        <div class="notice skill-draft-notice">
          <Icon name="pencil" />
          <p>
            You have an unpublished draft of this skill, based on revision {draft.baseRevision}
            {draft.baseRevision !== s.revision ? ` (the skill is now at revision ${s.revision})` : ''}.
          </p>
          <DraftExpiry expiresAt={draft.expiresAt} />
          <PageLink ctx={ctx} to={`/drafts/${draft.id}`} class="btn btn-secondary btn-sm">
            Continue editing
          </PageLink>
        </div>
      )}
      <div class="skill-summary">
        <SkillIcon icon={s.icon} size={28} />
        <SkillFacts detail={d} />
        {/* biome-ignore lint/a11y/noLabelWithoutControl: EnabledSwitch renders the checkbox, inside this label */}
        <label class="skill-enable">
          <EnabledSwitch ctx={ctx} skill={s} done={detail.reload} /> Enabled
        </label>
      </div>
      <Tabs
        label="Skill"
        tabs={TABS.map((t) => (t.id === 'files' ? { ...t, label: `Files (${d.files.length + 1})` } : t))}
        selected={tab}
        onSelect={(t) => ctx.navigate(`${ctx.base}/${id}${t === 'instructions' ? '' : `?tab=${t}`}`, { replace: true })}
      >
        {tab === 'instructions' && <Instructions body={d.body} markdown={d.markdown} />}
        {tab === 'files' && <FileList skillId={id} files={d.files} />}
        {tab === 'revisions' && <Revisions ctx={ctx} skillId={id} current={s.revision} />}
      </Tabs>
    </div>
  )
}

/** One revision as it was, with its files; a local skill's older revision can be published again. */
export function RevisionPage({ ctx, id, revision }: { ctx: PageContext; id: string; revision: number }) {
  const current = useResource((signal) => ctx.api.get<SkillDetail>(api.skill(id), { signal }), [id])
  const old = useResource((signal) => ctx.api.get<SkillDetail>(api.revision(id, revision), { signal }), [id, revision])
  const [busy, setBusy] = useState(false)
  const both = current.data && old.data ? { current: current.data, old: old.data } : undefined
  const error = current.error ?? old.error
  if (!both) {
    if (error !== undefined) {
      return (
        <div class="stack">
          <PageHeader title={`Revision ${revision}`} />
          <ErrorState
            title="This revision could not be loaded"
            error={error}
            onRetry={() => {
              current.reload()
              old.reload()
            }}
          />
          <p>
            <PageLink ctx={ctx} to={`/${id}?tab=revisions`}>
              Back to the revisions
            </PageLink>
          </p>
        </div>
      )
    }
    return <Loading label={`Loading revision ${revision}…`} />
  }
  const now = both.current.skill
  const isCurrent = now.revision === revision
  const restore = async () => {
    const ok = await ctx.confirm({
      title: `Restore revision ${revision}?`,
      message: `Its instructions and files are published again as revision ${now.revision + 1}. Revision ${now.revision} stays in the history.`,
      confirmLabel: 'Restore',
    })
    if (!ok) return
    setBusy(true)
    try {
      await ctx.api.post(`${api.revision(id, revision)}/restore`, { baseRevision: now.revision })
      ctx.toast.success(`Revision ${revision} is published again as revision ${now.revision + 1}`)
      ctx.navigate(`${ctx.base}/${id}?tab=revisions`)
    } catch (err) {
      ctx.toast.error(err)
      current.reload()
    } finally {
      setBusy(false)
    }
  }
  return (
    <div class="stack">
      <nav aria-label="Breadcrumb" class="skill-crumbs">
        <PageLink ctx={ctx} to="">
          Skills
        </PageLink>{' '}
        <span aria-hidden="true">/</span>{' '}
        <PageLink ctx={ctx} to={`/${id}?tab=revisions`}>
          {now.name}
        </PageLink>{' '}
        <span aria-hidden="true">/</span> <span>Revision {revision}</span>
      </nav>
      <PageHeader
        title={`${both.old.skill.name}, revision ${revision}`}
        description={both.old.skill.description}
        actions={
          now.source === 'local' &&
          !isCurrent && (
            <Button variant="primary" icon="rotate-ccw" busy={busy} onClick={() => void restore()}>
              Restore this revision
            </Button>
          )
        }
      />
      <div class={`notice ${isCurrent ? 'skill-current' : ''}`}>
        <Icon name={isCurrent ? 'circle-check' : 'clock'} />
        <p>
          {isCurrent
            ? 'This is the current revision.'
            : `You are looking at an older revision: the skill is now at revision ${now.revision}.`}{' '}
          <PageLink ctx={ctx} to={`/${id}`}>
            Open the current revision
          </PageLink>
        </p>
      </div>
      <Instructions body={both.old.body} markdown={both.old.markdown} />
      <section aria-label={`Files of revision ${revision}`} class="stack">
        <h2>Files</h2>
        <FileList skillId={id} files={both.old.files} revision={revision} />
      </section>
    </div>
  )
}
