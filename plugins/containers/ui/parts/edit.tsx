/**
 * Edit and recreate, keeping the name: image, ports, volumes, environment and restart policy, prefilled from the
 * container. Only what changed is sent (POST /api/containers/:id/recreate); everything else it has is kept. The
 * image is pulled when missing; the old container is kept until the new one runs, and comes back if that fails.
 */
import { useState } from 'preact/hooks'
import { Button, Dialog, ErrorDetails, errorDetails, errorMessage, type PageContext } from '@hostd/ui'
import type { Inspect } from './model.ts'
import { EnvRows, PortRows, VolumeRows, rowsFromInspect, rowsToSpec, type Rows } from './rows.tsx'
import { RESTART_OPTIONS } from './run.tsx'

/** The container's restart policy as the form's value ("on-failure:3" keeps its count). */
function policyOf(info: Inspect): string {
  const p = info.HostConfig.RestartPolicy
  const name = p?.Name || 'no'
  return name === 'on-failure' && p?.MaximumRetryCount ? `on-failure:${p.MaximumRetryCount}` : name
}

export function EditDialog({
  ctx,
  info,
  onClose,
  onDone,
}: {
  ctx: PageContext
  info: Inspect
  onClose: () => void
  onDone: () => void
}) {
  const name = info.Name.replace(/^\//, '')
  const admin = ctx.can('admin')
  const [initial] = useState(() => ({ rows: rowsFromInspect(info), image: info.Config.Image, policy: policyOf(info) }))
  const [image, setImage] = useState(initial.image)
  const [policy, setPolicy] = useState(initial.policy)
  const [rows, setRows] = useState<Rows>(initial.rows)
  const [busy, setBusy] = useState(false)
  const [failure, setFailure] = useState<{ message: string; raw?: string } | null>(null)
  const policies = RESTART_OPTIONS.some((o) => o.value === policy)
    ? RESTART_OPTIONS
    : [...RESTART_OPTIONS, { value: policy, label: policy }]

  const save = async () => {
    setFailure(null)
    let edit: Record<string, unknown>
    try {
      const now = rowsToSpec(rows, admin)
      const before = rowsToSpec(initial.rows, true)
      edit = {}
      if (image.trim() !== initial.image) edit.image = image.trim()
      if (policy !== initial.policy) edit.restartPolicy = policy
      for (const field of ['ports', 'volumes', 'env'] as const)
        if (JSON.stringify(now[field] ?? []) !== JSON.stringify(before[field] ?? []))
          edit[field] = now[field] ?? (field === 'env' ? {} : [])
    } catch (err) {
      setFailure({ message: (err as Error).message })
      return
    }
    if (Object.keys(edit).length === 0) {
      ctx.toast.info('Nothing changed')
      onClose()
      return
    }
    setBusy(true)
    try {
      const out = await ctx.api.post<{ pulled: boolean }>(
        `/api/containers/${encodeURIComponent(info.Id)}/recreate`,
        edit,
      )
      ctx.toast.success(`${name} was recreated with the changes${out.pulled ? ' (the image was pulled)' : ''}`)
      onDone()
    } catch (err) {
      setFailure({ message: errorMessage(err), raw: errorDetails(err) })
    } finally {
      setBusy(false)
    }
  }

  return (
    <Dialog
      open
      size="lg"
      title={`Edit ${name}`}
      onClose={() => !busy && onClose()}
      actions={
        <>
          <Button onClick={onClose} disabled={busy}>
            Cancel
          </Button>
          <Button variant="primary" icon="refresh" busy={busy} onClick={() => void save()}>
            Recreate with changes
          </Button>
        </>
      }
    >
      <div class="stack ctr-edit">
        <p class="dialog-text">
          The container is recreated under the same name with these settings; everything else it has is kept. Its named
          volumes keep their data; what it wrote outside volumes is lost. If the new one cannot start, the old one comes
          back.
        </p>
        <div class="ctr-grid">
          <div class="field">
            <label for="ctr-edit-image">Image</label>
            <input
              id="ctr-edit-image"
              class="input mono"
              autoComplete="off"
              spellcheck={false}
              value={image}
              onInput={(e) => setImage(e.currentTarget.value)}
            />
            <p class="field-hint">Pulled first when it is not on this host.</p>
          </div>
          <div class="field">
            <label for="ctr-edit-restart">Restart policy</label>
            <select
              id="ctr-edit-restart"
              class="input select"
              value={policy}
              onChange={(e) => setPolicy(e.currentTarget.value)}
            >
              {policies.map((o) => (
                <option key={o.value} value={o.value}>
                  {o.label}
                </option>
              ))}
            </select>
          </div>
        </div>
        <PortRows rows={rows.ports} onChange={(ports) => setRows({ ...rows, ports })} />
        <VolumeRows rows={rows.volumes} onChange={(volumes) => setRows({ ...rows, volumes })} admin={admin} />
        <EnvRows rows={rows.env} onChange={(env) => setRows({ ...rows, env })} />
        {failure && (
          <div class="form-error" role="alert">
            <p>{failure.message}</p>
            {failure.raw && <ErrorDetails details={failure.raw} />}
          </div>
        )}
      </div>
    </Dialog>
  )
}
