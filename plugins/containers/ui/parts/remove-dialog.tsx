/**
 * Removing one or many containers: a red (danger) confirmation that says what goes and what stays, with a clear
 * choice about volumes. Volumes are kept unless asked: "Also remove anonymous volumes" (the engine's `v`, like
 * `docker rm -v`) and each named volume listed with its own box. Host folders are never removed.
 * Used by the detail view (one container) and the list (one or a selection).
 */
import { useState } from 'preact/hooks'
import { Button, Dialog, ErrorDetails, errorDetails, errorMessage, type PageContext } from '@hostd/ui'

export interface RemoveTarget {
  id: string
  name: string
  state: string
  /** As the list gives them: a volume's name, or a host path for a bind mount. */
  mountedVolumes: string[]
}

/** What the remove route answers. */
export interface RemoveResult {
  id: string
  state: string
  converged: boolean
  removedVolumes: string[]
  keptVolumes: { name: string; reason: string }[]
}

export interface RemoveDialogProps {
  ctx: PageContext
  containers: RemoveTarget[]
  onClose: () => void
  /** After the removal: the ids removed (some may have failed; each failure was shown). */
  onRemoved: (removed: string[]) => void
}

/** Running, restarting or paused: removing it needs force. */
export function isUp(state: string): boolean {
  return state === 'running' || state === 'restarting' || state === 'paused'
}

/** An anonymous volume's name is the engine's 64-hex id; a host path is a bind mount; anything else is named. */
export function volumeKind(mounted: string): 'bind' | 'anonymous' | 'named' {
  if (mounted.startsWith('/')) return 'bind'
  return /^[0-9a-f]{64}$/.test(mounted) ? 'anonymous' : 'named'
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

export function RemoveDialog({ ctx, containers, onClose, onRemoved }: RemoveDialogProps) {
  const many = containers.length > 1
  const running = containers.filter((c) => isUp(c.state))
  const anonymous = containers.flatMap((c) => c.mountedVolumes.filter((v) => volumeKind(v) === 'anonymous'))
  const named = [...new Set(containers.flatMap((c) => c.mountedVolumes.filter((v) => volumeKind(v) === 'named')))]
  const binds = [...new Set(containers.flatMap((c) => c.mountedVolumes.filter((v) => volumeKind(v) === 'bind')))]
  const [force, setForce] = useState(running.length > 0)
  const [withAnonymous, setWithAnonymous] = useState(false)
  const [chosen, setChosen] = useState<Set<string>>(new Set())
  const [busy, setBusy] = useState(false)
  const [failure, setFailure] = useState<{ message: string; raw: string } | null>(null)
  const title = many ? `Remove ${containers.length} containers?` : `Remove ${containers[0]?.name}?`

  const remove = async () => {
    setBusy(true)
    setFailure(null)
    const removed: string[] = []
    const kept: string[] = []
    const failed: string[] = []
    const raw: string[] = []
    for (const c of containers) {
      const volumes = c.mountedVolumes.filter((v) => chosen.has(v))
      try {
        const out = await ctx.api.post<RemoveResult>(`/api/containers/${encodeURIComponent(c.id)}/remove`, {
          force,
          anonymousVolumes: withAnonymous,
          volumes,
        })
        removed.push(c.id)
        for (const v of out.keptVolumes) kept.push(`${v.name} (${v.reason})`)
      } catch (err) {
        failed.push(`${c.name}: ${errorMessage(err)}`)
        const details = errorDetails(err)
        if (details) raw.push(details)
      }
    }
    setBusy(false)
    if (removed.length > 0) {
      const what = many ? plural(removed.length, 'container') : `${containers[0]!.name}`
      ctx.toast.success(`${what} ${removed.length === 1 ? 'was' : 'were'} removed`)
    }
    if (kept.length > 0) ctx.toast.info(`Volumes kept: ${kept.join(', ')}`)
    if (failed.length > 0) {
      setFailure({ message: failed.join('; '), raw: raw.join('\n') })
      if (removed.length > 0) onRemoved(removed)
      return
    }
    onRemoved(removed)
  }

  const toggleVolume = (name: string, on: boolean) => {
    const next = new Set(chosen)
    if (on) next.add(name)
    else next.delete(name)
    setChosen(next)
  }

  return (
    <Dialog
      open
      title={title}
      onClose={() => !busy && onClose()}
      actions={
        <>
          <Button onClick={onClose} disabled={busy}>
            Cancel
          </Button>
          <Button variant="danger" icon="trash" busy={busy} onClick={() => void remove()}>
            {many ? `Remove ${plural(containers.length, 'container')}` : 'Remove container'}
          </Button>
        </>
      }
    >
      <div class="stack ctr-remove">
        {many && (
          <p class="dialog-text">
            {containers
              .slice(0, 12)
              .map((c) => c.name)
              .join(', ')}
            {containers.length > 12 ? ` and ${containers.length - 12} more` : ''}
          </p>
        )}
        <p class="dialog-text">
          {many ? 'The containers and the files they changed are' : 'The container and the files it changed are'}{' '}
          deleted. This cannot be undone.
        </p>
        {running.length > 0 && (
          <label class="ctr-check">
            <input
              type="checkbox"
              class="checkbox"
              checked={force}
              onChange={(e) => setForce(e.currentTarget.checked)}
            />
            <span>
              {many ? `Stop the running ones first (${running.length})` : 'Stop it first: it is running'}
              {!force && (
                <span class="field-hint"> Without this the engine refuses to remove a running container.</span>
              )}
            </span>
          </label>
        )}
        <fieldset class="ctr-fieldset">
          <legend>Volumes</legend>
          {anonymous.length === 0 && named.length === 0 && binds.length === 0 && (
            <p class="muted">{many ? 'They mount no volumes.' : 'It mounts no volumes.'}</p>
          )}
          {anonymous.length > 0 && (
            <label class="ctr-check">
              <input
                type="checkbox"
                class="checkbox"
                checked={withAnonymous}
                onChange={(e) => setWithAnonymous(e.currentTarget.checked)}
              />
              <span>
                {many ? 'Also remove their anonymous volumes' : 'Also remove its anonymous volumes'} (
                {plural(anonymous.length, 'volume')}, unnamed, made by the image)
              </span>
            </label>
          )}
          {named.length > 0 && (
            <>
              <p class="muted">Named volumes are kept unless you tick them; their data is lost when removed.</p>
              {named.map((v) => (
                <label key={v} class="ctr-check">
                  <input
                    type="checkbox"
                    class="checkbox"
                    checked={chosen.has(v)}
                    onChange={(e) => toggleVolume(v, e.currentTarget.checked)}
                  />
                  <span>
                    Remove volume <strong class="mono">{v}</strong>
                  </span>
                </label>
              ))}
            </>
          )}
          {binds.length > 0 && (
            <p class="muted">
              Host folders are never removed: <span class="mono">{binds.join(', ')}</span>
            </p>
          )}
        </fieldset>
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
