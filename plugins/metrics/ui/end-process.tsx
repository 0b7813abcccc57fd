/**
 * Ending a process (admin): a red confirmation naming the process, TERM through the root helper, then a look at
 * whether it ended; one that is still running after a few seconds (busy finishing, or ignoring TERM) is offered
 * Force quit (KILL), confirmed again. Refusals (init, hostd itself, the root helper) come back as the server's errors.
 */
import { useState } from 'preact/hooks'
import { ApiError, Button, Dialog, ErrorState, Icon, type PageContext } from '@hostd/ui'
import type { ProcessEntry, ProcessSample, ProcessSignalResult } from '../src/schemas.ts'

type Stage = 'ask' | 'ending' | 'still-running' | 'killing'

/** How long a process gets to end after TERM before Force quit is offered, and how often to look. */
const GRACE_MS = 5000
const LOOK_EVERY_MS = 500

export function EndProcessDialog({
  ctx,
  process: p,
  onClose,
  onEnded,
}: {
  ctx: PageContext
  process: ProcessEntry
  onClose: () => void
  onEnded: () => void
}) {
  const [stage, setStage] = useState<Stage>('ask')
  const [error, setError] = useState<unknown>(undefined)
  const label = `${p.name} (PID ${p.pid})`

  const send = async (signal: 'TERM' | 'KILL') => {
    const result = await ctx.api.post<ProcessSignalResult>(`/api/activity/processes/${p.pid}/signal`, { signal })
    if (result.dryRun) {
      ctx.toast.info(`Dry run: nothing was sent; the root helper would run "${(result.argv ?? []).join(' ')}"`)
      onEnded()
      return false
    }
    return true
  }
  const stillThere = async () => {
    const sample = await ctx.api.get<ProcessSample>('/api/activity/processes')
    return sample.processes.some((q) => q.pid === p.pid && q.name === p.name)
  }

  const end = async () => {
    setError(undefined)
    setStage('ending')
    try {
      if (!(await send('TERM'))) return
      for (const started = Date.now(); Date.now() - started < GRACE_MS; ) {
        if (!(await stillThere())) {
          ctx.toast.success(`${label} ended`)
          onEnded()
          return
        }
        await new Promise((r) => setTimeout(r, LOOK_EVERY_MS))
      }
      setStage('still-running')
    } catch (err) {
      setError(err)
      setStage('ask')
    }
  }
  const kill = async () => {
    setError(undefined)
    setStage('killing')
    try {
      if (!(await send('KILL'))) return
      ctx.toast.success(`${label} was forced to quit`)
      onEnded()
    } catch (err) {
      setError(err)
      setStage('still-running')
    }
  }

  const busy = stage === 'ending' || stage === 'killing'
  // Refused for good (init, hostd itself, already gone): nothing left to try but closing.
  const final =
    error instanceof ApiError &&
    ['HOSTD_ACTIVITY_PROCESS_PROTECTED', 'HOSTD_ACTIVITY_PROCESS_NOT_FOUND'].includes(error.code)
  const forcing = stage === 'still-running' || stage === 'killing'
  return (
    <Dialog
      open
      size="sm"
      title={forcing ? `Force ${label} to quit?` : `End ${label}?`}
      onClose={() => !busy && onClose()}
      actions={
        <>
          <Button onClick={onClose} disabled={busy}>
            {final ? 'Close' : forcing ? 'Keep it running' : 'Cancel'}
          </Button>
          {final ? null : forcing ? (
            <Button variant="danger" busy={stage === 'killing'} onClick={() => void kill()}>
              Force quit
            </Button>
          ) : (
            <Button variant="danger" busy={stage === 'ending'} onClick={() => void end()}>
              End process
            </Button>
          )}
        </>
      }
    >
      <div class="confirm-message activity-end">
        {forcing ? (
          <p>
            <Icon name="triangle-alert" size={14} /> {label} is still running {GRACE_MS / 1000} seconds after it was
            asked to end: it may be finishing its work, or ignoring the request. Force quit ends it at once; whatever it
            has not saved is lost.
          </p>
        ) : (
          <>
            <p>
              {label} is asked to end (TERM): it can save its work and close. If it is still running a few seconds
              later, you can force it to quit.
            </p>
            {p.command && <p class="activity-command mono">{p.command}</p>}
            <p class="muted">Run by {p.user}. A service may be started again by its supervisor.</p>
          </>
        )}
        {stage === 'ending' && <p role="status">Waiting for {label} to end…</p>}
        {error !== undefined && <ErrorState title={`${label} could not be ended`} error={error} />}
      </div>
    </Dialog>
  )
}
