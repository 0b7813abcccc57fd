/** A new local skill: its name, SKILL.md and supporting files, sent in one request (POST /api/skills). */
import { useState } from 'preact/hooks'
import {
  ApiError,
  Button,
  Card,
  errorMessage,
  Form,
  formatBytes,
  PageHeader,
  ProgressBar,
  TextArea,
  TextField,
  type PageContext,
} from '@hostd/ui'
import { AddFiles, FileRows, FilesError } from './files.tsx'
import {
  FIELD_ERRORS,
  FILE_ERRORS,
  LIMITS,
  limitError,
  readBase64,
  sendJson,
  utf8Bytes,
  type PickedFile,
  type SkillDetail,
} from './model.ts'

export const SKILL_TEMPLATE = `---
description: What this skill does and when to use it, in one sentence.
# icon: sparkles
# category: maintenance
# tags: [backup, disks]
---

# Steps

1. …
`

export function CreateSkill({ ctx }: { ctx: PageContext }) {
  const [picked, setPicked] = useState<PickedFile[]>([])
  const [filesError, setFilesError] = useState<string | null>(null)
  const [progress, setProgress] = useState<{ sent: number; total: number; phase: string } | null>(null)

  const add = (files: PickedFile[]) => {
    const next = [...picked.filter((p) => !files.some((f) => f.path.toLowerCase() === p.path.toLowerCase())), ...files]
    const problem = limitError(
      0,
      next.map((p) => ({ path: p.path, size: p.file.size })),
    )
    setFilesError(problem)
    if (!problem) setPicked(next)
  }

  const submit = async (values: Record<string, string | boolean>) => {
    const body = String(values.body)
    const problem = limitError(
      utf8Bytes(body),
      picked.map((p) => ({ path: p.path, size: p.file.size })),
    )
    if (problem) {
      setFilesError(problem)
      return
    }
    setFilesError(null)
    try {
      setProgress({ sent: 0, total: 0, phase: 'Reading files…' })
      const files = []
      for (const p of picked) files.push({ path: p.path, content: await readBase64(p.file) })
      const detail = await sendJson<SkillDetail>(
        ctx,
        'POST',
        '/api/skills',
        { name: String(values.name), body, files },
        (sent, total) => setProgress({ sent, total, phase: 'Uploading' }),
      )
      ctx.toast.success(`${detail.skill.name} was created`)
      ctx.navigate(`${ctx.base}/${detail.skill.id}`)
    } catch (err) {
      if (err instanceof ApiError && FILE_ERRORS.has(err.code)) setFilesError(errorMessage(err))
      else throw err
    } finally {
      setProgress(null)
    }
  }

  const total = picked.reduce((sum, p) => sum + p.file.size, 0)
  return (
    <div class="stack">
      <PageHeader
        title="New skill"
        description="A local skill: instructions in SKILL.md (Markdown after a short YAML frontmatter) and any files they use."
      />
      <Card>
        <Form
          label="New skill"
          submitLabel="Create skill"
          errorFields={FIELD_ERRORS}
          onSubmit={submit}
          actions={<Button onClick={() => ctx.navigate(ctx.base)}>Cancel</Button>}
          class="skill-form"
        >
          <TextField
            name="name"
            label="Name"
            required
            maxLength={LIMITS.nameChars}
            autoComplete="off"
            hint="Written into the frontmatter; local skill names are unique."
          />
          <TextArea
            name="body"
            label="SKILL.md"
            required
            rows={16}
            spellcheck={false}
            defaultValue={SKILL_TEMPLATE}
            hint="The frontmatter needs a description; icon, category and tags are optional. Lines starting with # inside it are comments."
          />
          <fieldset class="skill-fieldset">
            <legend>Supporting files</legend>
            <FileRows
              label="Chosen files"
              files={picked.map((p) => ({ path: p.path, size: p.file.size }))}
              onRemove={(path) => {
                setPicked(picked.filter((p) => p.path !== path))
                setFilesError(null)
              }}
            />
            {picked.length > 0 && (
              <p class="muted">
                {picked.length} file{picked.length === 1 ? '' : 's'}, {formatBytes(total)}
              </p>
            )}
            <AddFiles onAdd={add} disabled={progress !== null} />
            <FilesError message={filesError} />
          </fieldset>
          {progress && (
            <ProgressBar
              label="Creating the skill"
              value={progress.total ? progress.sent : undefined}
              max={progress.total || undefined}
              detail={
                progress.total ? `${formatBytes(progress.sent)} of ${formatBytes(progress.total)}` : progress.phase
              }
            />
          )}
        </Form>
      </Card>
    </div>
  )
}
