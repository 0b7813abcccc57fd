/** Adding supporting files: a drop zone, the folder they go into, and the limits checked before sending. */
import { useId, useState } from 'preact/hooks'
import { FileDrop, formatBytes, Icon, IconButton } from '@hostd/ui'
import { LIMITS, mib } from './model.ts'

/** `folder/name`, with the folder's slashes tidied (the server checks every path rule again). */
export function joinPath(folder: string, name: string): string {
  const clean = folder.trim().replace(/^\/+|\/+$/g, '')
  return clean ? `${clean}/${name}` : name
}

export interface AddFilesProps {
  /** Receives the chosen files with the paths they will have; throw nothing, report problems through `error`. */
  onAdd: (files: { file: File; path: string }[]) => void
  disabled?: boolean
}

/** The drop zone and the optional folder new files go into. */
export function AddFiles({ onAdd, disabled }: AddFilesProps) {
  const [folder, setFolder] = useState('')
  const folderId = useId()
  return (
    <div class="skill-add-files">
      <div class="field">
        <label for={folderId}>Folder for new files (optional)</label>
        <input
          id={folderId}
          class="input"
          placeholder="e.g. scripts"
          value={folder}
          autoComplete="off"
          spellcheck={false}
          onInput={(e) => setFolder(e.currentTarget.value)}
        />
      </div>
      <FileDrop
        label="Supporting files"
        disabled={disabled}
        onFiles={(files) => onAdd(files.map((file) => ({ file, path: joinPath(folder, file.name) })))}
      >
        Drop supporting files here (scripts, templates, references), or
      </FileDrop>
      <p class="field-hint">
        Up to {LIMITS.files - 1} files beside SKILL.md, {mib(LIMITS.fileBytes)} each, {mib(LIMITS.bundleBytes)} in all,
        at most {LIMITS.depth} folders deep.
      </p>
    </div>
  )
}

/** A list of files with their sizes (when known) and a remove button each. */
export function FileRows({
  label,
  files,
  onRemove,
  busyPath,
}: {
  /** The list's accessible name. */
  label: string
  files: { path: string; size?: number }[]
  onRemove?: (path: string) => void
  busyPath?: string | null
}) {
  if (files.length === 0) return <p class="muted">No supporting files yet.</p>
  return (
    <ul class="skill-file-rows" aria-label={label}>
      {files.map((f) => (
        <li key={f.path}>
          <Icon name="file" size={16} />
          <span class="mono skill-file-path">{f.path}</span>
          {f.size !== undefined && <span class="muted">{formatBytes(f.size)}</span>}
          {onRemove && (
            <IconButton
              icon="trash"
              size="sm"
              label={`Remove ${f.path}`}
              busy={busyPath === f.path}
              onClick={() => onRemove(f.path)}
            />
          )}
        </li>
      ))}
    </ul>
  )
}

/** A problem with the files, said where the files are. */
export function FilesError({ message }: { message: string | null }) {
  if (!message) return null
  return (
    <p class="form-error" role="alert">
      <Icon name="circle-alert" /> {message}
    </p>
  )
}
