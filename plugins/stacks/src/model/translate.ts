/**
 * One compose service into the containers plugin's RunSpec and run options. Each key hostd supports has its
 * translation here; a key (or a form of a value) it does not is reported, never dropped. Keys that reach the host
 * (privileged, host binds, devices, capabilities, host namespaces, security options) are noted with their path, so
 * a refusal names the service and the key; the containers plugin's role rules judge the RunSpec all the same.
 */
import { isAbsolute, join, normalize, relative } from 'node:path'
import type { HealthCheck, RunOptions, RunSpec } from '../../../containers/src/api.ts'
import { labelMap, type NetworkModel, type VolumeModel } from './shared.ts'
import { parseEnvFile } from './interpolate.ts'

export type Condition = 'service_started' | 'service_healthy' | 'service_completed_successfully'

export interface ServiceModel {
  name: string
  image: string
  pullPolicy: 'missing' | 'always' | 'never'
  containerName: string
  spec: RunSpec
  /** The run options but the compose and provenance labels (apply.ts adds those). */
  options: RunOptions
  dependsOn: { service: string; condition: Condition; required: boolean }[]
  /** Keys that reach the host, with why: an operator's deploy is refused naming them. */
  hostKeys: { path: string; why: string }[]
  /** Named volumes (engine names) and networks (engine names) the service uses. */
  volumes: string[]
  networks: string[]
}

export interface TranslateInput {
  project: string
  dir: string
  name: string
  def: Record<string, unknown>
  vars: ReadonlyMap<string, string>
  networks: ReadonlyMap<string, NetworkModel>
  volumes: ReadonlyMap<string, VolumeModel>
  readFile: (relative: string) => Promise<string | null>
}

type Report = (path: string, message?: string) => void

const SUPPORTED = new Set([
  'image',
  'command',
  'entrypoint',
  'environment',
  'env_file',
  'ports',
  'volumes',
  'networks',
  'network_mode',
  'depends_on',
  'healthcheck',
  'restart',
  'deploy',
  'mem_limit',
  'cpus',
  'labels',
  'user',
  'working_dir',
  'container_name',
  'hostname',
  'profiles',
  'privileged',
  'cap_add',
  'devices',
  'pid',
  'ipc',
  'stop_grace_period',
  'stop_signal',
  'dns',
  'tmpfs',
  'security_opt',
  'pull_policy',
])

/** Docker's default capability set: adding one of these reaches nothing more (as the containers plugin judges). */
const DEFAULT_CAPS = new Set(
  'CHOWN DAC_OVERRIDE FSETID FOWNER MKNOD NET_RAW SETGID SETUID SETFCAP SETPCAP NET_BIND_SERVICE SYS_CHROOT KILL AUDIT_WRITE'.split(
    ' ',
  ),
)

/** A compose duration (`1m30s`, `500ms`, `10s`; a bare number is seconds) in nanoseconds; null when it is not one. */
export function durationNs(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.round(value * 1e9) : null
  if (typeof value !== 'string' || !/^((\d+(\.\d+)?)(h|m|s|ms|us|ns))+$/.test(value)) return null
  const unit: Record<string, number> = { h: 3600e9, m: 60e9, s: 1e9, ms: 1e6, us: 1e3, ns: 1 }
  let total = 0
  for (const m of value.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|ns)/g)) total += Number(m[1]) * unit[m[2]!]!
  return Math.round(total)
}

/** A compose size (`512m`, `1gb`, a number of bytes) as the RunSpec takes it. */
function size(value: unknown): string | number | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value > 0 ? value : null
  const m = /^([0-9]+(?:\.[0-9]+)?)\s*([bkmg])?b?$/i.exec(String(value))
  return m ? `${m[1]}${m[2] ?? ''}` : null
}

const words = (v: unknown): string | string[] | undefined =>
  v === undefined || v === null ? undefined : Array.isArray(v) ? v.map(String) : String(v)

export async function translateService(
  input: TranslateInput,
  unsupported: Report,
  reference: Report,
): Promise<ServiceModel | null> {
  const { def, name, project } = input
  const at = (key: string) => `services.${name}.${key}`
  const before = { count: 0 }
  const report: Report = (path, message) => {
    before.count++
    unsupported(path, message)
  }
  const ref: Report = (path, message) => {
    before.count++
    reference(path, message)
  }
  for (const key of Object.keys(def)) if (!SUPPORTED.has(key) && !key.startsWith('x-')) report(at(key))
  if (typeof def.image !== 'string' || def.image === '') {
    if (def.image === '') ref(at('image'), `service ${name}'s image is empty (a variable without a value?)`)
    else report(at('image'), `service ${name} has no image (hostd does not build images: give one)`)
    return null
  }
  const hostKeys: { path: string; why: string }[] = []
  const spec: RunSpec = {
    image: def.image,
    name: typeof def.container_name === 'string' ? def.container_name : `${project}-${name}-1`,
  }
  const options: RunOptions = {}
  const extraArgs: string[] = []

  if (def.command !== undefined) spec.command = words(def.command)
  if (def.entrypoint !== undefined) spec.entrypoint = words(def.entrypoint)

  // environment: env_file first, environment over it; a bare NAME takes the stack's .env value, else is left out.
  const env = new Map<string, string>()
  const envFiles = def.env_file === undefined ? [] : Array.isArray(def.env_file) ? def.env_file : [def.env_file]
  for (const [i, item] of envFiles.entries()) {
    const entry =
      typeof item === 'string' ? { path: item, required: true } : (item as { path: string; required?: boolean })
    for (const k of Object.keys(entry)) if (k !== 'path' && k !== 'required') report(`${at('env_file')}[${i}].${k}`)
    const rel = normalize(entry.path)
    if (isAbsolute(rel) || rel.startsWith('..')) {
      report(`${at('env_file')}[${i}]`, `env_file ${entry.path}: only files inside the stack's folder are read`)
      continue
    }
    const text = await input.readFile(rel)
    if (text === null) {
      if (entry.required !== false) ref(at('env_file'), `env_file ${entry.path} does not exist in the stack's folder`)
      continue
    }
    const errors: { line: number; message: string }[] = []
    for (const [k, v] of parseEnvFile(text, errors)) env.set(k, v)
    for (const e of errors) ref(at('env_file'), `env_file ${entry.path}: ${e.message}`)
  }
  if (Array.isArray(def.environment)) {
    for (const item of def.environment as unknown[]) {
      const [k, v] = String(item).split(/=(.*)/s) as [string, string | undefined]
      if (v !== undefined) env.set(k, v)
      else if (input.vars.has(k)) env.set(k, input.vars.get(k)!)
    }
  } else if (def.environment && typeof def.environment === 'object') {
    for (const [k, v] of Object.entries(def.environment)) {
      if (v !== null && v !== undefined) env.set(k, String(v))
      else if (input.vars.has(k)) env.set(k, input.vars.get(k)!)
    }
  }
  if (env.size) spec.env = [...env].map(([k, v]) => `${k}=${v}`)

  // ports
  const ports: NonNullable<RunSpec['ports']> = []
  for (const [i, p] of ((def.ports ?? []) as unknown[]).entries()) {
    if (typeof p === 'string' || typeof p === 'number') ports.push(String(p))
    else {
      const o = p as Record<string, unknown>
      for (const k of Object.keys(o))
        if (!['target', 'published', 'host_ip', 'protocol'].includes(k)) report(`${at('ports')}[${i}].${k}`)
      const published = o.published === undefined ? undefined : Number(o.published)
      if (published !== undefined && !Number.isInteger(published)) {
        report(`${at('ports')}[${i}].published`, `${at('ports')}[${i}]: a published range is not supported`)
        continue
      }
      ports.push({
        containerPort: Number(o.target),
        ...(published !== undefined ? { hostPort: published } : {}),
        ...(typeof o.host_ip === 'string' ? { hostAddress: o.host_ip } : {}),
        ...(o.protocol ? { proto: String(o.protocol) as 'tcp' } : {}),
      })
    }
  }
  if (ports.length) spec.ports = ports

  // volumes: named volumes must be declared at the top; a relative bind is the stack's folder's.
  const volumes: string[] = []
  const namedVolumes: string[] = []
  const tmpfs: string[] = []
  const bindSource = (source: string) => (source.startsWith('/') ? source : join(input.dir, source))
  const named = (key: string, path: string): string | null => {
    const v = input.volumes.get(key)
    if (!v) {
      ref(path, `volume ${key} is not declared under the top-level volumes`)
      return null
    }
    namedVolumes.push(v.name)
    return v.name
  }
  for (const [i, v] of ((def.volumes ?? []) as unknown[]).entries()) {
    const path = `${at('volumes')}[${i}]`
    if (typeof v === 'string') {
      const parts = v.split(':')
      if (parts.length < 2) {
        report(path, `${path}: anonymous volumes ("${v}") are not supported: name the volume`)
        continue
      }
      const [source, target, mode] = parts as [string, string, string | undefined]
      const isBind = source.startsWith('/') || source.startsWith('.') || source.startsWith('~')
      if (source.startsWith('~')) {
        report(path, `${path}: give the host path without "~"`)
        continue
      }
      if (isBind) {
        const host = bindSource(source)
        hostKeys.push({ path, why: `host path ${host} mounted at ${target}` })
        volumes.push([host, target, ...(mode ? [mode] : [])].join(':'))
      } else {
        const real = named(source, path)
        if (real) volumes.push([real, target, ...(mode ? [mode] : [])].join(':'))
      }
      continue
    }
    const o = v as Record<string, unknown>
    for (const k of Object.keys(o)) if (!['type', 'source', 'target', 'read_only'].includes(k)) report(`${path}.${k}`)
    const target = String(o.target ?? '')
    if (o.type === 'tmpfs') tmpfs.push(target)
    else if (o.type === 'bind') {
      const host = bindSource(String(o.source ?? ''))
      hostKeys.push({ path, why: `host path ${host} mounted at ${target}` })
      volumes.push([host, target, ...(o.read_only ? ['ro'] : [])].join(':'))
    } else if (o.type === 'volume' && typeof o.source === 'string') {
      const real = named(o.source, path)
      if (real) volumes.push([real, target, ...(o.read_only ? ['ro'] : [])].join(':'))
    } else report(path, `${path}: type ${String(o.type)}${o.source ? '' : ' without a source'} is not supported`)
  }
  if (volumes.length) spec.volumes = volumes
  if (def.tmpfs !== undefined) tmpfs.push(...(Array.isArray(def.tmpfs) ? def.tmpfs.map(String) : [String(def.tmpfs)]))
  if (tmpfs.length) spec.tmpfs = tmpfs

  // networks: the first is the container's network, the others are joined before it starts; each with the
  // service's name as an alias, so the others reach it by name.
  const serviceNetworks: string[] = []
  if (def.network_mode !== undefined) {
    const mode = String(def.network_mode)
    if (def.networks !== undefined) ref(at('network_mode'), `service ${name} has both network_mode and networks`)
    if (mode === 'host') hostKeys.push({ path: at('network_mode'), why: "the host's network namespace" })
    if (mode === 'host' || mode === 'none' || mode === 'bridge') spec.network = mode
    else report(at('network_mode'), `${at('network_mode')}: "${mode}" is not supported (host, none or bridge)`)
  } else {
    const list: [string, { aliases?: string[] }][] =
      def.networks === undefined
        ? [['default', {}]]
        : Array.isArray(def.networks)
          ? (def.networks as string[]).map((n) => [n, {}])
          : Object.entries(def.networks as Record<string, Record<string, unknown> | null>).map(([k, v]) => {
              for (const key of Object.keys(v ?? {})) if (key !== 'aliases') report(`${at('networks')}.${k}.${key}`)
              return [k, { aliases: (v?.aliases as string[] | undefined)?.map(String) }]
            })
    const joined: { name: string; aliases: string[] }[] = []
    for (const [key, opts] of list) {
      const net = input.networks.get(key)
      if (!net) {
        ref(`${at('networks')}.${key}`, `network ${key} is not declared under the top-level networks`)
        continue
      }
      serviceNetworks.push(net.name)
      joined.push({ name: net.name, aliases: [name, ...(opts.aliases ?? [])] })
    }
    if (joined.length) {
      spec.network = joined[0]!.name
      options.aliases = joined[0]!.aliases
      if (joined.length > 1) options.moreNetworks = joined.slice(1)
    }
  }

  // depends_on
  const dependsOn: ServiceModel['dependsOn'] = []
  if (Array.isArray(def.depends_on))
    for (const d of def.depends_on) dependsOn.push({ service: String(d), condition: 'service_started', required: true })
  else if (def.depends_on && typeof def.depends_on === 'object')
    for (const [dep, v] of Object.entries(def.depends_on as Record<string, Record<string, unknown>>)) {
      for (const k of Object.keys(v ?? {}))
        if (k !== 'condition' && k !== 'required') report(`${at('depends_on')}.${dep}.${k}`)
      dependsOn.push({
        service: dep,
        condition: (v?.condition as Condition) ?? 'service_started',
        required: v?.required !== false,
      })
    }

  // healthcheck
  if (def.healthcheck && typeof def.healthcheck === 'object') {
    const h = def.healthcheck as Record<string, unknown>
    for (const k of Object.keys(h))
      if (!['test', 'interval', 'timeout', 'retries', 'start_period', 'disable'].includes(k))
        report(`${at('healthcheck')}.${k}`)
    const hc: HealthCheck = {
      test:
        h.disable === true
          ? ['NONE']
          : typeof h.test === 'string'
            ? ['CMD-SHELL', h.test]
            : ((h.test as unknown[] | undefined) ?? []).map(String),
    }
    for (const [key, field] of [
      ['interval', 'interval'],
      ['timeout', 'timeout'],
      ['start_period', 'startPeriod'],
    ] as const) {
      if (h[key] === undefined) continue
      const ns = durationNs(h[key])
      if (ns === null) ref(`${at('healthcheck')}.${key}`, `${at('healthcheck')}.${key} is not a duration such as 10s`)
      else hc[field] = ns
    }
    if (h.retries !== undefined) hc.retries = Number(h.retries)
    if (hc.test.length === 0) ref(at('healthcheck'), `${at('healthcheck')} has no test`)
    else options.healthcheck = hc
  }

  if (def.restart !== undefined) spec.restartPolicy = String(def.restart)
  // Resources: deploy.resources.limits (cpus, memory), or the older mem_limit and cpus.
  if (def.deploy !== undefined) {
    const d = (def.deploy ?? {}) as Record<string, unknown>
    for (const k of Object.keys(d))
      if (k !== 'resources' && !(k === 'replicas' && d.replicas === 1)) report(`${at('deploy')}.${k}`)
    const r = (d.resources ?? {}) as Record<string, unknown>
    for (const k of Object.keys(r)) if (k !== 'limits') report(`${at('deploy')}.resources.${k}`)
    const limits = (r.limits ?? {}) as Record<string, unknown>
    for (const k of Object.keys(limits))
      if (k !== 'cpus' && k !== 'memory') report(`${at('deploy')}.resources.limits.${k}`)
    if (limits.cpus !== undefined) spec.cpus = Number(limits.cpus)
    if (limits.memory !== undefined) {
      const m = size(limits.memory)
      if (m === null) ref(`${at('deploy')}.resources.limits.memory`, 'not a size such as 512m')
      else spec.memory = m
    }
  }
  if (def.cpus !== undefined) spec.cpus = Number(def.cpus)
  if (def.mem_limit !== undefined) {
    const m = size(def.mem_limit)
    if (m === null) ref(at('mem_limit'), `${at('mem_limit')} is not a size such as 512m`)
    else spec.memory = m
  }
  if (def.labels !== undefined) options.extraLabels = labelMap(def.labels)
  if (def.user !== undefined) spec.user = String(def.user)
  if (def.working_dir !== undefined) spec.workdir = String(def.working_dir)
  if (def.hostname !== undefined) options.hostname = String(def.hostname)
  if (def.dns !== undefined) spec.dns = Array.isArray(def.dns) ? def.dns.map(String) : [String(def.dns)]
  if (def.stop_grace_period !== undefined) {
    const ns = durationNs(def.stop_grace_period)
    if (ns === null) ref(at('stop_grace_period'), `${at('stop_grace_period')} is not a duration such as 10s`)
    else options.stopTimeout = Math.ceil(ns / 1e9)
  }
  if (def.stop_signal !== undefined) options.stopSignal = String(def.stop_signal)

  // What reaches the host: into the RunSpec as the run form takes it, so the same role rules judge it.
  if (def.privileged === true) {
    hostKeys.push({ path: at('privileged'), why: 'privileged' })
    extraArgs.push('--privileged')
  }
  if (def.cap_add !== undefined) {
    const caps = (def.cap_add as unknown[]).map(String)
    spec.capAdd = caps
    for (const cap of caps) {
      const n = cap.toUpperCase().replace(/^CAP_/, '')
      if (!DEFAULT_CAPS.has(n)) hostKeys.push({ path: at('cap_add'), why: `capability ${n}` })
    }
  }
  if (def.devices !== undefined) {
    const devices: string[] = []
    for (const [i, d] of (def.devices as unknown[]).entries()) {
      if (typeof d !== 'string') {
        report(`${at('devices')}[${i}]`, `${at('devices')}[${i}]: give devices as host[:container[:permissions]]`)
        continue
      }
      devices.push(d)
      hostKeys.push({ path: at('devices'), why: `device ${d.split(':')[0]}` })
    }
    spec.devices = devices
  }
  for (const ns of ['pid', 'ipc'] as const) {
    if (def[ns] === undefined) continue
    const mode = String(def[ns])
    if (mode !== 'host') {
      report(at(ns), `${at(ns)}: only "host" is supported`)
      continue
    }
    hostKeys.push({ path: at(ns), why: `the host's ${ns} namespace` })
    extraArgs.push(`--${ns}`, mode)
  }
  if (def.security_opt !== undefined)
    for (const opt of (def.security_opt as unknown[]).map(String)) {
      hostKeys.push({ path: at('security_opt'), why: `security option ${opt}` })
      extraArgs.push('--security-opt', opt)
    }
  if (extraArgs.length) spec.extraArgs = extraArgs

  const policy = def.pull_policy === undefined ? 'missing' : String(def.pull_policy)
  const pullPolicy = policy === 'if_not_present' ? 'missing' : policy
  if (pullPolicy !== 'missing' && pullPolicy !== 'always' && pullPolicy !== 'never') {
    report(at('pull_policy'), `${at('pull_policy')}: "${policy}" is not supported (missing, always, never)`)
    return null
  }
  if (before.count > 0) return null
  return {
    name,
    image: def.image,
    pullPolicy,
    containerName: spec.name!,
    spec,
    options,
    dependsOn,
    hostKeys,
    volumes: namedVolumes,
    networks: serviceNetworks,
  }
}

/** True when `path` (resolved) stays inside `dir`. */
export function inside(dir: string, path: string): boolean {
  const rel = relative(dir, path)
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel))
}
