import type { PluginRecord } from './records.ts'
import { withDeadline } from './supervision.ts'

/** A condition-gated plugin's request re-runs its checks when the last run is older than this. */
export const CONDITION_RECHECK_MS = 2000
/**
 * How long one check may take at most (less when the calls into plugin code have a shorter deadline): a probe that
 * hangs (a socket that never answers) makes its plugin unavailable instead of holding its requests.
 */
export const CONDITION_DEADLINE_MS = 5000

export const conditionsStale = (record: PluginRecord): boolean =>
  Date.now() - record.conditionsCheckedAt > CONDITION_RECHECK_MS

/** Runs a running plugin's conditions in order: the first unmet one makes it unavailable, with its reason. */
export async function checkConditions(record: PluginRecord, callTimeoutMs = CONDITION_DEADLINE_MS): Promise<void> {
  const deadline = Math.min(callTimeoutMs, CONDITION_DEADLINE_MS)
  record.conditionsCheckedAt = Date.now()
  if (!record.runtime) return
  let reason: string | null = null
  for (const condition of record.definition?.conditions ?? []) {
    try {
      const result = await withDeadline(`condition ${condition.name}`, () => condition.check(), deadline)
      if (result !== true) reason = typeof result === 'string' ? result : `${condition.name} is not met`
    } catch (err) {
      reason = `${condition.name}: ${(err as Error).message}`
    }
    if (reason) break
  }
  record.state = reason ? 'unavailable' : 'active'
  record.reason = reason
  record.waitingOn = reason ? 'condition' : null
}
