/** A container's lifecycle actions (start, stop, restart, kill, remove), for operators and up, in the list and the detail view. */
import { useEffect, useState } from 'preact/hooks'
import { Button, IconButton, type PageContext } from '@hostd/ui'
import { isUp, RemoveDialog } from './remove-dialog.tsx'

export interface ActionTarget {
  id: string
  name: string
  state: string
  /** Volume names and bind host paths (as the list gives them), for the removal's volume choices. */
  mountedVolumes?: string[]
}

type Action = 'start' | 'stop' | 'restart' | 'kill'

const DONE: Record<Action, string> = {
  start: 'was started',
  stop: 'was stopped',
  restart: 'was restarted',
  kill: 'was killed',
}
const VERB: Record<Action, string> = { start: 'Start', stop: 'Stop', restart: 'Restart', kill: 'Kill' }
const ICON: Record<Action, string> = { start: 'play', stop: 'square', restart: 'rotate-ccw', kill: 'zap' }

// Defined beside the removal dialog (which needs it too) and re-exported here, where the list imports it from.
export { isUp }

export interface ContainerActionsProps {
  ctx: PageContext
  container: ActionTarget
  /** After an action: reload what shows the container. */
  onChanged: () => void
  /** After the container was removed. */
  onRemoved: () => void
  /** Icon buttons named "Stop web" (table rows) instead of labelled buttons (the detail view's header). */
  compact?: boolean
}

export function ContainerActions({ ctx, container, onChanged, onRemoved, compact = false }: ContainerActionsProps) {
  const [busy, setBusy] = useState<Action | null>(null)
  const [removing, setRemoving] = useState(false)
  const { id, name } = container
  const up = isUp(container.state)

  const act = async (action: Action) => {
    if (action === 'kill') {
      const ok = await ctx.confirm({
        title: `Kill ${name}?`,
        message: 'It is stopped at once (SIGKILL), without a clean shutdown: work it has not saved is lost.',
        confirmLabel: 'Kill container',
        danger: true,
      })
      if (!ok) return
    }
    setBusy(action)
    try {
      await ctx.api.post(`/api/containers/${encodeURIComponent(id)}/${action}`)
      ctx.toast.success(`${name} ${DONE[action]}`)
      onChanged()
    } catch (err) {
      ctx.toast.error(err)
    } finally {
      setBusy(null)
    }
  }

  const actions: Action[] = up ? ['stop', 'restart', 'kill'] : ['start']
  return (
    <div class={compact ? 'row-actions' : 'ctr-actions'}>
      {actions.map((action) =>
        compact ? (
          <IconButton
            key={action}
            icon={ICON[action]}
            label={`${VERB[action]} ${name}`}
            busy={busy === action}
            disabled={busy !== null}
            onClick={() => void act(action)}
          />
        ) : (
          <Button
            key={action}
            icon={ICON[action]}
            variant={action === 'start' ? 'primary' : 'secondary'}
            busy={busy === action}
            disabled={busy !== null}
            onClick={() => void act(action)}
          >
            {VERB[action]}
          </Button>
        ),
      )}
      {compact ? (
        <IconButton icon="trash" label={`Remove ${name}`} disabled={busy !== null} onClick={() => setRemoving(true)} />
      ) : (
        <Button icon="trash" variant="danger" disabled={busy !== null} onClick={() => setRemoving(true)}>
          Remove
        </Button>
      )}
      {removing && (
        <RemoveDialog
          ctx={ctx}
          containers={[{ ...container, mountedVolumes: container.mountedVolumes ?? [] }]}
          onClose={() => setRemoving(false)}
          onRemoved={() => {
            setRemoving(false)
            onRemoved()
          }}
        />
      )}
    </div>
  )
}

/** The auto-start setting as a switch for operators and up (as words for viewers). */
export function AutoStartSwitch({
  ctx,
  container,
  onChanged,
}: {
  ctx: PageContext
  container: { id: string; name: string; autoStart: boolean }
  onChanged: () => void
}) {
  const [pending, setPending] = useState<boolean | null>(null)
  // Keep showing the asked-for value until the reloaded list agrees (no flicker back).
  useEffect(() => {
    if (pending === container.autoStart) setPending(null)
  }, [container.autoStart])
  if (!ctx.can('operator')) return <span>{container.autoStart ? 'On' : 'Off'}</span>
  const toggle = async (enabled: boolean) => {
    setPending(enabled)
    try {
      await ctx.api.post(`/api/containers/${encodeURIComponent(container.id)}/autostart`, { enabled })
      ctx.toast.success(`${container.name} ${enabled ? 'starts' : 'no longer starts'} automatically with hostd`)
      onChanged()
    } catch (err) {
      setPending(null)
      ctx.toast.error(err)
    }
  }
  return (
    <input
      type="checkbox"
      // biome-ignore lint/a11y/useAriaPropsForRole: a native checkbox, whose checked state the browser exposes (no aria-checked)
      role="switch"
      class="switch"
      checked={pending ?? container.autoStart}
      disabled={pending !== null}
      aria-label={`Start ${container.name} automatically`}
      title="Start automatically when hostd starts"
      onChange={(e) => void toggle(e.currentTarget.checked)}
    />
  )
}
