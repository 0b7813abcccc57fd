/**
 * The rule state machine, no I/O: each (rule, target) pair is an instance that is inactive, pending (its condition
 * holds, for less than `forSeconds`) or firing (until its clear condition has held for `clearForSeconds`). Sources
 * hand it observations; `tick` moves instances whose hold time has passed. What changed comes back so the service
 * can persist it, write history and decide on notifications.
 */
import type { Rule } from './schemas.ts'

export interface Observation {
  target: string
  /** The firing condition holds (a metric above its threshold, a container down...). */
  fire: boolean
  /** The clear condition holds (below the clear threshold: hysteresis); for conditions without one, `!fire`. */
  clear: boolean
  value: number | null
  summary: string
  labels: Record<string, string>
}

export interface Instance {
  key: string
  ruleId: string
  target: string
  state: 'inactive' | 'pending' | 'firing'
  fire: boolean
  clear: boolean
  value: number | null
  summary: string
  labels: Record<string, string>
  pendingSince: number | null
  firingSince: number | null
  clearingSince: number | null
  /** The current firing episode's notification went out. */
  notified: boolean
  /** When a firing notification last went out for this pair (flapping damping and repeats use it). */
  lastNotifiedAt: number | null
  /** Its row in the history while it fires. */
  historyId: number | null
  /** Last change of state (inactive instances are forgotten a repeat interval after it). */
  changedAt: number
}

export interface Transition {
  type: 'firing' | 'resolved'
  instance: Instance
}

export const instanceKey = (ruleId: string, target: string) => `${ruleId}\u0000${target}`

export class Evaluator {
  readonly instances = new Map<string, Instance>()

  /** Instances loaded from the store at start: their states go on where they were. */
  load(instances: Instance[]): void {
    for (const i of instances) this.instances.set(i.key, i)
  }

  forRule(ruleId: string): Instance[] {
    return [...this.instances.values()].filter((i) => i.ruleId === ruleId)
  }

  /**
   * Applies a rule's observations. With `complete`, they cover every target the rule has: an instance whose target
   * is no longer there (an unmounted file system, a removed container) is observed as cleared.
   */
  observe(rule: Rule, observations: Observation[], now: number, complete: boolean, out: Changes): void {
    const seen = new Set<string>()
    for (const o of observations) {
      const key = instanceKey(rule.id, o.target)
      seen.add(key)
      let i = this.instances.get(key)
      if (!i) {
        if (!o.fire) continue
        i = {
          key,
          ruleId: rule.id,
          target: o.target,
          state: 'inactive',
          fire: false,
          clear: true,
          value: null,
          summary: '',
          labels: {},
          pendingSince: null,
          firingSince: null,
          clearingSince: null,
          notified: false,
          lastNotifiedAt: null,
          historyId: null,
          changedAt: now,
        }
        this.instances.set(key, i)
      }
      const before = snapshotOf(i)
      i.fire = o.fire
      i.clear = o.clear
      i.value = o.value
      i.labels = o.labels
      if (i.state !== 'firing' || o.fire) i.summary = o.summary
      this.#step(rule, i, now, out)
      if (snapshotOf(i) !== before) out.changed.add(i)
    }
    if (!complete) return
    for (const i of this.forRule(rule.id)) {
      if (seen.has(i.key) || i.state === 'inactive') continue
      i.fire = false
      i.clear = true
      this.#step(rule, i, now, out, true)
      out.changed.add(i)
    }
  }

  /** Moves instances whose hold has passed, on the observations they last had. */
  tick(rules: Map<string, Rule>, now: number, out: Changes): void {
    for (const i of this.instances.values()) {
      const rule = rules.get(i.ruleId)
      if (!rule) continue
      const before = snapshotOf(i)
      this.#step(rule, i, now, out)
      if (snapshotOf(i) !== before) out.changed.add(i)
    }
  }

  /** Removes a rule's instances (the rule was deleted or disabled): answers those that were firing. */
  drop(ruleId: string): Instance[] {
    const gone = this.forRule(ruleId)
    for (const i of gone) this.instances.delete(i.key)
    return gone.filter((i) => i.state === 'firing')
  }

  /** The earliest time a hold ends (a pending alert may fire, a clearing one resolve), or null. */
  nextDue(rules: Map<string, Rule>): number | null {
    let next: number | null = null
    const consider = (t: number) => (next = next === null ? t : Math.min(next, t))
    for (const i of this.instances.values()) {
      const rule = rules.get(i.ruleId)
      if (!rule) continue
      if (i.state === 'pending' && i.fire && i.pendingSince !== null) consider(i.pendingSince + rule.forSeconds * 1000)
      if (i.state === 'firing' && i.clearingSince !== null) consider(i.clearingSince + rule.clearForSeconds * 1000)
    }
    return next
  }

  #step(rule: Rule, i: Instance, now: number, out: Changes, gone = false): void {
    if (i.state === 'inactive' || i.state === 'pending') {
      if (!i.fire) {
        if (i.state === 'pending') {
          i.state = 'inactive'
          i.pendingSince = null
          i.changedAt = now
        }
        return
      }
      if (i.state === 'inactive') {
        i.state = 'pending'
        i.pendingSince = now
        i.changedAt = now
      }
      if (now - (i.pendingSince ?? now) >= rule.forSeconds * 1000) {
        i.state = 'firing'
        i.firingSince = now
        i.clearingSince = null
        i.notified = false
        i.changedAt = now
        out.transitions.push({ type: 'firing', instance: i })
      }
      return
    }
    // Firing: it resolves once the clear condition has held for clearForSeconds (at once when the target is gone).
    if (!i.clear) {
      i.clearingSince = null
      return
    }
    i.clearingSince ??= now
    if (gone || now - i.clearingSince >= rule.clearForSeconds * 1000) {
      i.state = 'inactive'
      i.pendingSince = null
      i.clearingSince = null
      i.changedAt = now
      out.transitions.push({ type: 'resolved', instance: i })
    }
  }
}

export interface Changes {
  changed: Set<Instance>
  transitions: Transition[]
}

export const newChanges = (): Changes => ({ changed: new Set(), transitions: [] })

/** What is persisted of an instance, to tell whether an observation changed it. */
function snapshotOf(i: Instance): string {
  return `${i.state}|${i.pendingSince}|${i.clearingSince}|${i.notified}|${i.lastNotifiedAt}|${i.value}|${i.summary}`
}
