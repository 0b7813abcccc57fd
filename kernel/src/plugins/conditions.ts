import type { PluginRecord } from './records.ts'

/** A condition-gated plugin's request re-runs its checks when the last run is older than this. */
export const CONDITION_RECHECK_MS = 2000

export const conditionsStale = (record: PluginRecord): boolean =>
  Date.now() - record.conditionsCheckedAt > CONDITION_RECHECK_MS

/** Runs a running plugin's conditions in order: the first unmet one makes it unavailable, with its reason. */
export async function checkConditions(record: PluginRecord): Promise<void> {
  record.conditionsCheckedAt = Date.now()
  if (!record.runtime) return
  let reason: string | null = null
  for (const condition of record.definition?.conditions ?? []) {
    try {
      const result = await condition.check()
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
