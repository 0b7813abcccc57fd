/**
 * What each rule observes in what the sources hand over: a metrics snapshot (the sampler's, once a minute), a
 * container's state (on each engine event), a disk's SMART health. Plain functions; the default rules.
 */
import type { ContainerState } from '../../containers/src/api.ts'
import type { MetricsSnapshot } from '../../metrics/src/api.ts'
import type { Observation } from './engine.ts'
import type { Rule } from './schemas.ts'

/**
 * The rules made at first start, and each new one once at the first start of the version that adds it (ids fixed, so
 * each is made once: one an admin deleted stays deleted); no channel exists until an admin adds one.
 */
export const DEFAULT_RULES: Rule[] = [
  {
    id: 'disk-full',
    builtin: true,
    name: 'File system over 90 % full',
    enabled: true,
    source: 'metric',
    metric: 'filesystem.usedPercent',
    match: '',
    threshold: 90,
    clearThreshold: 85,
    forSeconds: 60,
    clearForSeconds: 0,
    severity: 'warning',
    repeatIntervalSeconds: 4 * 3600,
    channels: [],
  },
  {
    id: 'smart-failing',
    builtin: true,
    name: 'Disk SMART health failing',
    enabled: true,
    source: 'smart',
    match: '',
    threshold: 0,
    clearThreshold: 0,
    forSeconds: 0,
    clearForSeconds: 0,
    severity: 'critical',
    repeatIntervalSeconds: 24 * 3600,
    channels: [],
  },
  {
    id: 'container-down',
    builtin: true,
    name: 'Container with a restart policy is down',
    enabled: true,
    source: 'container',
    condition: 'down',
    match: '',
    threshold: 0,
    clearThreshold: 0,
    forSeconds: 5,
    clearForSeconds: 0,
    severity: 'critical',
    repeatIntervalSeconds: 4 * 3600,
    channels: [],
  },
  ...[
    { id: 'plugin-failed', name: 'A plugin failed', source: 'plugin' as const, severity: 'warning' as const },
    {
      id: 'sign-in-failures',
      name: 'Many failed sign-ins',
      source: 'account' as const,
      condition: 'failedSignIns' as const,
      threshold: 10,
      windowSeconds: 300,
      clearForSeconds: 300,
    },
    { id: 'new-admin', name: 'New admin account', source: 'account' as const, condition: 'newAdmin' as const },
    {
      id: 'two-factor-off',
      name: 'Two-factor sign-in turned off',
      source: 'account' as const,
      condition: 'twoFactorOff' as const,
    },
    {
      id: 'daemon-restarted',
      name: 'hostd restarted without a clean stop',
      source: 'daemon' as const,
      severity: 'info' as const,
      clearForSeconds: 3600,
    },
    {
      id: 'updates-waiting',
      name: 'Package updates waiting',
      source: 'system' as const,
      condition: 'updates' as const,
      severity: 'info' as const,
      enabled: false,
      repeatIntervalSeconds: 7 * 86_400,
    },
    {
      id: 'reboot-required',
      name: 'The host needs a reboot',
      source: 'system' as const,
      condition: 'rebootRequired' as const,
      severity: 'info' as const,
      repeatIntervalSeconds: 7 * 86_400,
    },
  ].map(
    (r): Rule => ({
      builtin: true,
      enabled: true,
      match: '',
      threshold: 0,
      clearThreshold: 0,
      forSeconds: 0,
      // Alerts of single events (account, daemon) show this long; a state's (plugin, system) clear at once.
      clearForSeconds: r.source === 'account' ? 86_400 : 0,
      severity: 'warning',
      repeatIntervalSeconds: 24 * 3600,
      channels: [],
      ...r,
    }),
  ),
]

/** The default rules made by earlier versions, before the list of made ones was kept. */
export const FIRST_DEFAULT_RULES = ['disk-full', 'smart-failing', 'container-down']

/** `*` any run of characters, `?` one; everything else literal. An empty pattern matches everything. */
export function globMatch(pattern: string, text: string): boolean {
  if (pattern === '') return true
  const re = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.')
  return new RegExp(`^${re}$`).test(text)
}

const round = (v: number) => Math.round(v * 10) / 10
const METRIC_WORDS: Record<NonNullable<Rule['metric']>, { what: string; unit: string }> = {
  'filesystem.usedPercent': { what: 'used', unit: ' %' },
  'cpu.usage': { what: 'CPU usage', unit: ' %' },
  'memory.usedPercent': { what: 'Memory in use', unit: ' %' },
  'swap.usedPercent': { what: 'Swap in use', unit: ' %' },
  'load.one': { what: '1-minute load', unit: '' },
  'temperature.max': { what: 'Hottest sensor', unit: ' °C' },
}

/** A metric rule's observations in one snapshot (every target: the list is complete). */
export function metricObservations(rule: Rule, s: MetricsSnapshot): Observation[] {
  if (!rule.metric) return []
  const values: { target: string; value: number; labels: Record<string, string> }[] = []
  switch (rule.metric) {
    case 'filesystem.usedPercent':
      for (const f of s.filesystems)
        values.push({
          target: f.mountpoint,
          value: f.usedPercent,
          labels: { mountpoint: f.mountpoint, device: f.device },
        })
      break
    case 'cpu.usage':
      values.push({ target: 'host', value: s.cpu.usage, labels: {} })
      break
    case 'memory.usedPercent':
      if (s.memory.totalBytes > 0)
        values.push({ target: 'host', value: (100 * s.memory.usedBytes) / s.memory.totalBytes, labels: {} })
      break
    case 'swap.usedPercent':
      if (s.memory.swapTotalBytes > 0)
        values.push({ target: 'host', value: (100 * s.memory.swapUsedBytes) / s.memory.swapTotalBytes, labels: {} })
      break
    case 'load.one':
      values.push({ target: 'host', value: s.load.one, labels: {} })
      break
    case 'temperature.max':
      if (s.temperatures.length)
        values.push({ target: 'host', value: Math.max(...s.temperatures.map((t) => t.celsius)), labels: {} })
      break
  }
  const words = METRIC_WORDS[rule.metric]
  return values
    .filter((v) => globMatch(rule.match, v.target))
    .map((v) => {
      const value = round(v.value)
      const where = rule.metric === 'filesystem.usedPercent' ? `File system ${v.target}: ${words.what}` : words.what
      return {
        target: v.target,
        fire: value > rule.threshold,
        clear: value < rule.clearThreshold,
        value,
        summary: `${where} ${value}${words.unit} (threshold ${rule.threshold}${words.unit})`,
        labels: v.labels,
      }
    })
}

const POLICY_RESTARTS = new Set(['always', 'unless-stopped'])

/** A container rule's observation of one container, or null when the rule does not watch it. */
export function containerObservation(rule: Rule, c: ContainerState): Observation | null {
  if (!globMatch(rule.match, c.name)) return null
  let fire = false
  let summary = ''
  switch (rule.condition) {
    case 'down': {
      const expected = POLICY_RESTARTS.has(c.restartPolicy) || (c.restartPolicy === 'on-failure' && c.exitCode !== 0)
      fire = expected && c.state !== 'running'
      summary = `Container ${c.name} (restart policy ${c.restartPolicy}) is ${c.state}${c.state === 'exited' ? ` with code ${c.exitCode}` : ''}`
      break
    }
    case 'unhealthy':
      fire = c.health === 'unhealthy'
      summary = `Container ${c.name} is unhealthy`
      break
    case 'exitedNonZero':
      fire = c.state === 'exited' && c.exitCode !== null && c.exitCode !== 0
      summary = `Container ${c.name} exited with code ${c.exitCode}`
      break
    case 'restarting':
      fire = c.state === 'restarting'
      summary = `Container ${c.name} keeps restarting (${c.restartCount} restarts)`
      break
    default:
      return null
  }
  return {
    target: c.name,
    fire,
    clear: !fire,
    value: rule.condition === 'exitedNonZero' ? c.exitCode : null,
    summary,
    labels: { container: c.name, image: c.image },
  }
}

/** A disk's SMART health as the smart rule sees it. */
export interface DiskHealth {
  disk: string
  passed: boolean
  model: string
}

export function smartObservation(rule: Rule, d: DiskHealth): Observation | null {
  if (!globMatch(rule.match, d.disk)) return null
  return {
    target: d.disk,
    fire: !d.passed,
    clear: d.passed,
    value: null,
    summary: d.passed
      ? `Disk ${d.disk} passes its SMART self-assessment`
      : `Disk ${d.disk} (${d.model}) fails its SMART self-assessment`,
    labels: { disk: d.disk },
  }
}
