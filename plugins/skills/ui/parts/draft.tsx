/**
 * A draft (`/skills/drafts/<draftId>`): edit SKILL.md and stage supporting files, then publish them as a new
 * revision, or discard. Drafts live 24 hours. When the skill moved past the draft's base revision (someone
 * published meanwhile), publishing is refused with 409: the page says so, and offers to carry the text over to a
 * new draft on the current revision.
 */
import { useEffect, useState } from 'preact/hooks'
import {
  ApiError,
  Badge,
  Button,
  Card,
  Empty,
  errorMessage,
  ErrorState,
  formatBytes,
  formatDateTime,
  Icon,
  Loading,
  PageHeader,
  ProgressBar,
  TextArea,
  useResource,
  type PageContext,
} from '@hostd/ui'
import { DraftExpiry, PageLink } from './common.tsx'
import { AddFiles, FileRows, FilesError } from './files.tsx'
import {
  api,
  createDraft,
  FILE_ERRORS,
  limitError,
  readBase64,
  sendJson,
  type PickedFile,
  type SkillDetail,
  type SkillDraft,
} from './model.ts'

const STALE = 'HOSTD_SKILLS_STALE_REVISION'

/** What a draft's files lack or add compared with another file list. */
function fileChanges(draft: string[], other: string[]) {
  const key = (p: string) => p.toLowerCase()
  const have = new Set(other.map(key))
  const mine = new Set(draft.map(key))
  return { onlyInDraft: draft.filter((p) => !have.has(key(p))), notInDraft: other.filter((p) => !mine.has(key(p))) }
}

function Conflict({
  ctx,
  draft,
  text,
  current,
  onRebased,
  onDiscard,
}: {
  ctx: PageContext
  draft: SkillDraft
  text: string
  current: SkillDetail
  onRebased: (next: SkillDraft) => void
  onDiscard: () => void
}) {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  const changes = fileChanges(draft.files, current.files)
  const rebase = async () => {
    setBusy(true)
    setError(undefined)
    try {
      const next = await createDraft(ctx, {
        body: text,
        targetSkillId: current.skill.id,
        baseRevision: current.skill.revision,
      })
      await ctx.api.delete(api.draft(draft.id)).catch(() => undefined) // the old one expires by itself otherwise
      onRebased(next)
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  return (
    <section class="skill-conflict" role="alert" aria-labelledby="skill-conflict-title">
      <h2 id="skill-conflict-title">
        <Icon name="triangle-alert" /> This skill changed while you were editing
      </h2>
      <p>
        Your draft is based on revision {draft.baseRevision}, but the skill is now at revision {current.skill.revision}
        {current.skill.updatedAt ? ` (changed ${formatDateTime(current.skill.updatedAt)})` : ''}. Publishing it would
        overwrite that change, so it is refused. Your draft is kept as it is.
      </p>
      <p>What you can do:</p>
      <ul>
        <li>
          <strong>Look at revision {current.skill.revision}</strong> to see what changed (it opens in a new tab; this
          draft stays).
        </li>
        <li>
          <strong>Carry your text over</strong> to a new draft based on revision {current.skill.revision}, then publish
          it. Your text replaces theirs: bring their change into it first if it should stay. Supporting files then come
          from revision {current.skill.revision}
          {changes.onlyInDraft.length + changes.notInDraft.length > 0 ? ':' : '.'}
          {changes.onlyInDraft.length > 0 && (
            <>
              {' '}
              add <span class="mono">{changes.onlyInDraft.join(', ')}</span> again;
            </>
          )}
          {changes.notInDraft.length > 0 && (
            <>
              {' '}
              remove <span class="mono">{changes.notInDraft.join(', ')}</span> again if you meant to.
            </>
          )}
        </li>
        <li>
          <strong>Discard your draft</strong> and keep their change.
        </li>
      </ul>
      {error !== undefined && (
        <p class="form-error" role="alert">
          <Icon name="circle-alert" /> {errorMessage(error)}
        </p>
      )}
      <div class="skill-conflict-actions">
        <a class="btn btn-secondary btn-md" href={`${ctx.base}/${current.skill.id}`} target="_blank" rel="noopener">
          <Icon name="external-link" size={16} />
          <span>Open revision {current.skill.revision}</span>
        </a>
        <Button variant="primary" icon="refresh" busy={busy} onClick={() => void rebase()}>
          Carry my text to revision {current.skill.revision}
        </Button>
        <Button variant="ghost" icon="trash" onClick={onDiscard}>
          Discard my draft
        </Button>
      </div>
    </section>
  )
}

export function DraftPage({ ctx, draftId }: { ctx: PageContext; draftId: string }) {
  const loaded = useResource((signal) => ctx.api.get<SkillDraft>(api.draft(draftId), { signal }), [draftId])
  const [draft, setDraft] = useState<SkillDraft | null>(null)
  const [text, setText] = useState('')
  const [saved, setSaved] = useState('')
  const [busy, setBusy] = useState<'save' | 'publish' | 'discard' | null>(null)
  const [bodyError, setBodyError] = useState<string | null>(null)
  const [stale, setStale] = useState(false)
  const [filesError, setFilesError] = useState<string | null>(null)
  const [uploading, setUploading] = useState<{ path: string; sent: number; total: number } | null>(null)
  const [removing, setRemoving] = useState<string | null>(null)
  const targetId = draft?.targetSkillId ?? loaded.data?.targetSkillId
  const target = useResource(
    (signal) => (targetId ? ctx.api.get<SkillDetail>(api.skill(targetId), { signal }) : Promise.resolve(null)),
    [targetId],
  )

  useEffect(() => {
    if (loaded.data && loaded.data.id !== draft?.id) {
      setDraft(loaded.data)
      setText(loaded.data.markdown)
      setSaved(loaded.data.markdown)
      setStale(false)
    }
  }, [loaded.data])

  const dirty = text !== saved
  // The browser asks before a reload or close throws unsaved text away.
  useEffect(() => {
    if (!dirty) return
    const warn = (e: BeforeUnloadEvent) => e.preventDefault()
    addEventListener('beforeunload', warn)
    return () => removeEventListener('beforeunload', warn)
  }, [dirty])

  if (!draft) {
    if (loaded.error instanceof ApiError && loaded.error.status === 404) {
      return (
        <div class="stack">
          <PageHeader title="Draft not found" />
          <Empty
            icon="clock"
            title="This draft is gone"
            action={<Button onClick={() => ctx.navigate(ctx.base)}>Back to skills</Button>}
          >
            Drafts last 24 hours; this one expired, was discarded, or was started by someone else.
          </Empty>
        </div>
      )
    }
    if (loaded.error !== undefined)
      return <ErrorState title="The draft could not be loaded" error={loaded.error} onRetry={loaded.reload} />
    return <Loading label="Loading the draft…" />
  }

  const isEdit = Boolean(draft.targetSkillId)
  const current = target.data ?? null
  const backTo = isEdit ? `${ctx.base}/${draft.targetSkillId}` : ctx.base

  const save = async (): Promise<SkillDraft | null> => {
    setBodyError(null)
    try {
      const sent = text
      const next = await ctx.api.patch<SkillDraft>(api.draft(draft.id), { body: sent })
      setDraft(next)
      setSaved(next.markdown)
      if (sent !== next.markdown) setText((t) => (t === sent ? next.markdown : t))
      return next
    } catch (err) {
      if (
        err instanceof ApiError &&
        (err.code === 'HOSTD_SKILLS_FRONTMATTER_INVALID' ||
          err.code === 'HOSTD_SKILLS_NAME_INVALID' ||
          err.code === 'HOSTD_SKILLS_FILE_TOO_LARGE')
      )
        setBodyError(err.message)
      else ctx.toast.error(err)
      return null
    }
  }

  const act = async (what: 'save' | 'publish' | 'discard', work: () => Promise<void>) => {
    setBusy(what)
    try {
      await work()
    } finally {
      setBusy(null)
    }
  }

  const onSave = () =>
    act('save', async () => {
      if (await save()) ctx.toast.success('Draft saved')
    })

  const onPublish = () =>
    act('publish', async () => {
      if (dirty && !(await save())) return
      try {
        const detail = await ctx.api.post<SkillDetail>(`${api.draft(draft.id)}/publish`)
        setSaved(text)
        ctx.toast.success(
          isEdit
            ? `${detail.skill.name} is now at revision ${detail.skill.revision}`
            : `${detail.skill.name} was created`,
        )
        ctx.navigate(`${ctx.base}/${detail.skill.id}`)
      } catch (err) {
        if (err instanceof ApiError && err.code === STALE) {
          setStale(true)
          target.reload()
        } else if (err instanceof ApiError && err.code === 'HOSTD_SKILLS_NAME_TAKEN') {
          setBodyError(err.message)
        } else {
          ctx.toast.error(err)
        }
      }
    })

  const onDiscard = () =>
    act('discard', async () => {
      const ok = await ctx.confirm({
        title: 'Discard this draft?',
        message: 'Its text and staged files are deleted. The skill stays as it is.',
        confirmLabel: 'Discard draft',
        danger: true,
      })
      if (!ok) return
      try {
        await ctx.api.delete(api.draft(draft.id))
        setSaved(text)
        ctx.toast.info('Draft discarded')
        ctx.navigate(backTo)
      } catch (err) {
        ctx.toast.error(err)
      }
    })

  const addFiles = async (files: PickedFile[]) => {
    const staged = draft.files.filter((p) => !files.some((f) => f.path.toLowerCase() === p.toLowerCase()))
    // Staged files' sizes are not listed, so the total is left to the server; count, size and depth are checked here.
    const problem = limitError(
      0,
      files.map((f) => ({ path: f.path, size: f.file.size })),
      staged.map((path) => ({ path, size: 0 })),
    )
    setFilesError(problem)
    if (problem) return
    let latest = draft
    try {
      for (const f of files) {
        setUploading({ path: f.path, sent: 0, total: f.file.size })
        const content = await readBase64(f.file)
        latest = await sendJson<SkillDraft>(
          ctx,
          'PUT',
          `${api.draft(draft.id)}/files`,
          { path: f.path, content },
          (sent, total) => setUploading({ path: f.path, sent, total }),
        )
        setDraft(latest)
      }
    } catch (err) {
      setFilesError(err instanceof ApiError && FILE_ERRORS.has(err.code) ? err.message : errorMessage(err))
    } finally {
      setUploading(null)
    }
  }

  const removeFile = async (path: string) => {
    setRemoving(path)
    try {
      setDraft(await ctx.api.delete<SkillDraft>(`${api.draft(draft.id)}/files?path=${encodeURIComponent(path)}`))
      setFilesError(null)
    } catch (err) {
      setFilesError(errorMessage(err))
    } finally {
      setRemoving(null)
    }
  }

  if (draft.publishedRevision !== null) {
    return (
      <div class="stack">
        <PageHeader title={`Draft of ${draft.name}`} />
        <Empty
          icon="circle-check"
          title={`Published as revision ${draft.publishedRevision}`}
          action={
            <Button variant="primary" onClick={() => ctx.navigate(`${ctx.base}/${draft.publishSkillId}`)}>
              Open the skill
            </Button>
          }
        >
          A published draft cannot change; edit the skill again to start a new one.
        </Empty>
      </div>
    )
  }

  const conflict = current && isEdit && (stale || current.skill.revision !== draft.baseRevision)
  return (
    <div class="stack">
      <nav aria-label="Breadcrumb" class="skill-crumbs">
        <PageLink ctx={ctx} to="">
          Skills
        </PageLink>{' '}
        <span aria-hidden="true">/</span>{' '}
        {isEdit ? (
          <PageLink ctx={ctx} to={`/${draft.targetSkillId}`}>
            {current?.skill.name ?? draft.name}
          </PageLink>
        ) : (
          <span>New skill</span>
        )}{' '}
        <span aria-hidden="true">/</span> <span>Draft</span>
      </nav>
      <PageHeader
        title={isEdit ? `Edit ${current?.skill.name ?? draft.name}` : `New skill: ${draft.name}`}
        description="Your changes stay in this draft, visible only to you, until you publish them as a new revision."
        actions={
          <>
            <Button
              variant="ghost"
              icon="trash"
              busy={busy === 'discard'}
              disabled={busy !== null && busy !== 'discard'}
              onClick={() => void onDiscard()}
            >
              Discard
            </Button>
            <Button
              icon="check"
              busy={busy === 'save'}
              disabled={!dirty || busy !== null}
              onClick={() => void onSave()}
            >
              Save draft
            </Button>
            <Button
              variant="primary"
              icon="upload"
              busy={busy === 'publish'}
              disabled={busy !== null || uploading !== null || Boolean(conflict)}
              onClick={() => void onPublish()}
            >
              Publish
            </Button>
          </>
        }
      />
      <div class="skill-draft-facts">
        <Badge tone="accent">Draft</Badge>
        {isEdit && <span>Based on revision {draft.baseRevision}</span>}
        <DraftExpiry expiresAt={draft.expiresAt} />
        <span class="muted">
          until {formatDateTime(draft.expiresAt)}; an expired draft is deleted with its staged files.
        </span>
        <span class="skill-save-state" aria-live="polite">
          {dirty ? 'Unsaved changes' : 'All changes saved in the draft'}
        </span>
      </div>
      {conflict && current && (
        <Conflict
          ctx={ctx}
          draft={draft}
          text={text}
          current={current}
          onDiscard={() => void onDiscard()}
          onRebased={(next) => {
            setSaved(text) // the text lives on in the new draft
            ctx.toast.success(`Your text is now a draft based on revision ${next.baseRevision}`)
            ctx.navigate(`${ctx.base}/drafts/${next.id}`, { replace: true })
          }}
        />
      )}
      <Card>
        <TextArea
          name="body"
          label="Instructions (SKILL.md)"
          rows={20}
          spellcheck={false}
          value={text}
          onInput={(e) => {
            setText(e.currentTarget.value)
            setBodyError(null)
          }}
          aria-invalid={bodyError ? true : undefined}
          hint="The frontmatter at the top carries the name and description."
        />
        {bodyError && (
          <p class="form-error" role="alert">
            <Icon name="circle-alert" /> {bodyError}
          </p>
        )}
      </Card>
      <Card title="Supporting files">
        <div class="stack">
          <p class="muted">
            {isEdit ? `Staged in this draft, starting from revision ${draft.baseRevision}'s files. ` : ''}Changes here
            are published with the draft.
          </p>
          <FileRows
            label="Staged files"
            files={draft.files.map((path) => ({ path }))}
            onRemove={(path) => void removeFile(path)}
            busyPath={removing}
          />
          <AddFiles onAdd={(files) => void addFiles(files)} disabled={uploading !== null} />
          {uploading && (
            <ProgressBar
              label={`Uploading ${uploading.path}`}
              value={uploading.sent}
              max={uploading.total || undefined}
              detail={`${formatBytes(uploading.sent)} of ${formatBytes(uploading.total)}`}
            />
          )}
          <FilesError message={filesError} />
        </div>
      </Card>
    </div>
  )
}
