/**
 * What the rules about hostd itself and the host observe: the kernel's plugin states (`plugin`), its audit records
 * (`account`: failed sign-ins, new admins, two-factor turned off), hostd's own start (`daemon`), and the host's
 * waiting updates and required reboot (`system`). Plain functions, like rules.ts.
 */
import type { AuditRecordEvent, PluginStateEvent } from '@hostd/sdk'
import type { Observation } from './engine.ts'
import { globMatch } from './rules.ts'
import type { Rule } from './schemas.ts'

const fired = (target: string, summary: string, labels: Record<string, string>, value: number | null = null) => ({
  target,
  fire: true,
  clear: false,
  value,
  summary,
  labels,
})

/** Every plugin the kernel knows (complete): one that failed fires, with its error; any other state clears. */
export function pluginObservations(rule: Rule, plugins: PluginStateEvent[]): Observation[] {
  // Two records may share an id (a new version that failed beside the one serving): failed if either is.
  const byId = new Map<string, PluginStateEvent>()
  for (const p of plugins)
    if (globMatch(rule.match, p.id) && (byId.get(p.id)?.state !== 'failed' || p.state === 'failed')) byId.set(p.id, p)
  return [...byId.values()].map((p) => {
    const failed = p.state === 'failed'
    return {
      target: p.id,
      fire: failed,
      clear: !failed,
      value: null,
      summary: failed
        ? `Plugin ${p.id}${p.version ? ` ${p.version}` : ''} failed: ${p.reason ?? 'no reason given'}`
        : `Plugin ${p.id} is ${p.state}`,
      labels: { plugin: p.id, ...(p.version ? { version: p.version } : {}) },
    }
  })
}

const by = (e: AuditRecordEvent) => (e.username ? ` by ${e.username}` : '')
const POLICY_RANK: Record<string, number> = { nobody: 0, admins: 1, everyone: 2 }

/** A failed sign-in (a wrong password or code, an unknown name, a throttled attempt) counted by the burst rule. */
export const isFailedSignIn = (e: AuditRecordEvent) => e.action === 'auth.login' && e.result === 'failure'

/** An audit record a newAdmin or twoFactorOff rule fires on, or null. */
export function accountObservation(rule: Rule, e: AuditRecordEvent): Observation | null {
  if (e.result !== 'success') return null
  const user = e.target ?? ''
  let hit: Observation | null = null
  if (rule.condition === 'newAdmin' && e.detail.role === 'admin') {
    if (e.action === 'user.create') hit = fired(user, `New admin account ${user}, created${by(e)}`, { user })
    if (e.action === 'user.role') hit = fired(user, `${user} was made an admin${by(e)}`, { user })
  }
  if (rule.condition === 'twoFactorOff') {
    if (e.action === 'user.two-factor.disable')
      hit = fired(user, `${user} turned off two-factor sign-in for their account`, { user })
    if (e.action === 'user.two-factor.reset' && e.detail.wasOn === true)
      hit = fired(user, `Two-factor sign-in of ${user} was turned off (reset${by(e)})`, { user })
    const from = POLICY_RANK[String(e.detail.previous)]
    const to = POLICY_RANK[String(e.detail.requireTwoFactor)]
    if (e.action === 'auth.policy' && from !== undefined && to !== undefined && to < from)
      hit = fired(
        'policy',
        `The two-factor policy was lowered from ${e.detail.previous} to ${e.detail.requireTwoFactor}${by(e)}`,
        {},
      )
  }
  return hit && globMatch(rule.match, hit.target) ? hit : null
}

/** A failed sign-in as the burst rule remembers it. */
export interface Failure {
  at: number
  ip: string | null
  username: string | null
}

/** The burst rule's observation when a failure arrives: fires at `threshold` failures within `windowSeconds`. */
export function failedSignInObservation(rule: Rule, failures: Failure[], now: number): Observation | null {
  const since = now - (rule.windowSeconds ?? 300) * 1000
  const recent = failures.filter((f) => f.at > since && globMatch(rule.match, f.username ?? ''))
  const needed = Math.max(1, rule.threshold)
  if (recent.length < needed) return null
  const top = (values: (string | null)[]) => {
    const counts = new Map<string, number>()
    for (const v of values) if (v) counts.set(v, (counts.get(v) ?? 0) + 1)
    return [...counts.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3)
      .map(([v]) => v)
  }
  const addresses = top(recent.map((f) => f.ip))
  const names = top(recent.map((f) => f.username))
  const minutes = Math.round(((rule.windowSeconds ?? 300) / 60) * 10) / 10
  return fired(
    'sign-in',
    `${recent.length} failed sign-ins within ${minutes} min` +
      (addresses.length ? `, most from ${addresses.join(', ')}` : '') +
      (names.length ? `; names tried: ${names.join(', ')}` : ''),
    { ...(addresses[0] ? { address: addresses[0] } : {}) },
    recent.length,
  )
}

/** How hostd's previous process ended, as the daemon rule reads it at start. */
export interface DaemonRun {
  /** Random per process: the same process starting the plugin again (an upgrade) is no restart. */
  run: string
  startedAt: string
  /** The host's boot (/proc/sys/kernel/random/boot_id): a different one means the host restarted too. */
  bootId: string | null
  /** Written by a stop: the daemon stopped cleanly (SIGTERM, SIGINT, an unload of the plugin). */
  cleanStop: boolean
}

/** The daemon rule's observation at start: hostd started again after a process that did not stop cleanly. */
export function daemonObservation(previous: DaemonRun, now: DaemonRun): Observation {
  const host =
    previous.bootId && now.bootId
      ? previous.bootId === now.bootId
        ? 'the host kept running'
        : 'the host restarted too'
      : 'the host may have restarted'
  return fired(
    'hostd',
    `hostd started again at ${now.startedAt} without a clean stop (it crashed, was killed, or the power went; ` +
      `${host}). It had started at ${previous.startedAt}`,
    {},
  )
}

/** The host's state as the system rules read it; null: not known (no packages plugin, the file unreadable). */
export interface SystemState {
  updates: { count: number; names: string[] } | null
  reboot: { required: boolean; packages: string[] } | null
}

export function systemObservations(rule: Rule, s: SystemState): Observation[] {
  if (rule.condition === 'updates' && s.updates) {
    const { count, names } = s.updates
    const listed = names.slice(0, 5).join(', ') + (names.length > 5 ? ', ...' : '')
    return [
      {
        target: 'host',
        fire: count > rule.threshold,
        clear: count <= rule.threshold,
        value: count,
        summary: `${count} package update${count === 1 ? '' : 's'} waiting${count ? `: ${listed}` : ''}`,
        labels: {},
      },
    ]
  }
  if (rule.condition === 'rebootRequired' && s.reboot) {
    const { required, packages } = s.reboot
    return [
      {
        target: 'host',
        fire: required,
        clear: !required,
        value: null,
        summary: required
          ? `The host needs a reboot${packages.length ? ` (for ${packages.slice(0, 5).join(', ')})` : ''}`
          : 'No reboot required',
        labels: {},
      },
    ]
  }
  return []
}

/**
 * A backup job's run, from the backups plugin's audit record (`backups.run`, the job's name as target): a failure
 * fires for that job with restic's reason, a success clears it. Null when the rule does not watch this job.
 */
export function backupObservation(rule: Rule, e: AuditRecordEvent): Observation | null {
  if (e.action !== 'backups.run' || rule.condition !== 'backupFailed') return null
  const job = e.target ?? ''
  if (!globMatch(rule.match, job)) return null
  const failed = e.result === 'failure'
  const why = typeof e.detail.message === 'string' ? `: ${e.detail.message}` : ''
  return {
    target: job,
    fire: failed,
    clear: !failed,
    value: null,
    summary: failed ? `Backup job ${job} failed${why}` : `Backup job ${job} succeeded`,
    labels: { job },
  }
}

/** A backup job as the backups plugin's `backups.status` service answers it (the fields these rules read). */
export interface BackupJobSeen {
  name: string
  intervalMinutes: number | null
  createdAt: string
  lastSuccessAt: string | null
}

/**
 * Scheduled backup jobs without a successful run for `threshold` hours (Umbrel's 24 by default), counted from the
 * job's creation while it never succeeded; a job run only when asked is not watched. One observation per job.
 */
export function backupOverdueObservations(rule: Rule, jobs: BackupJobSeen[], now: number): Observation[] {
  if (rule.condition !== 'backupOverdue') return []
  const hours = rule.threshold > 0 ? rule.threshold : 24
  return jobs
    .filter((j) => j.intervalMinutes !== null && globMatch(rule.match, j.name))
    .map((j) => {
      const since = Date.parse(j.lastSuccessAt ?? j.createdAt)
      const ago = Math.max(0, (now - since) / 3_600_000)
      const late = ago >= hours
      return {
        target: j.name,
        fire: late,
        clear: !late,
        value: Math.round(ago * 10) / 10,
        summary: late
          ? `Backup job ${j.name} has had no successful run for ${Math.floor(ago)} h` +
            (j.lastSuccessAt ? ` (last success ${j.lastSuccessAt})` : ' (never succeeded)')
          : `Backup job ${j.name} succeeded within ${hours} h`,
        labels: { job: j.name },
      }
    })
}
