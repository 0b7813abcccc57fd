/**
 * A stack's compose file into hostd's model: YAML (the `yaml` package, loaded on first use) -> interpolation with
 * the stack's `.env` -> the compose specification's JSON schema (validator.ts) -> the keys hostd translates (any
 * other key is refused, named, never ignored) -> one RunSpec and its run options per active service
 * (translate.ts). Every problem is an Issue with the key's path and, where the file has it, its line.
 */
import type { Document, LineCounter } from 'yaml'
import { interpolateTree, parseEnvFile, type InterpolationIssue } from './interpolate.ts'
import { labelMap, type NetworkModel, type VolumeModel } from './shared.ts'
import { translateService, type ServiceModel } from './translate.ts'
import type { ComposeValidator } from './validator.ts'

export type { NetworkModel, VolumeModel } from './shared.ts'

export type IssueKind = 'yaml' | 'schema' | 'interpolation' | 'unsupported' | 'reference' | 'env'

export interface Issue {
  kind: IssueKind
  /** The key's path (`services.web.privileged`); empty for the whole file. */
  path: string
  /** 1-based line in compose.yaml (or in .env for kind `env`), when known. */
  line?: number
  message: string
}

export interface ProjectModel {
  name: string
  dir: string
  /** Active services (profiles applied), by name, in file order. */
  services: Map<string, ServiceModel>
  /** Every service name in the file, active or not. */
  allServices: string[]
  networks: Map<string, NetworkModel>
  volumes: Map<string, VolumeModel>
  warnings: Issue[]
}

export interface LoadInput {
  name: string
  dir: string
  compose: string
  env: string
  /** Profiles to enable besides COMPOSE_PROFILES in .env. */
  profiles?: string[]
  /** Reads a file of the stack's folder for `env_file` (confined to the folder); null when it does not exist. */
  readFile: (relative: string) => Promise<string | null>
}

export type LoadResult = { ok: true; project: ProjectModel } | { ok: false; issues: Issue[]; warnings: Issue[] }

const TOP_KEYS = new Set(['version', 'name', 'services', 'networks', 'volumes'])
const NETWORK_KEYS = new Set(['name', 'external', 'internal', 'labels', 'driver'])
const VOLUME_KEYS = new Set(['name', 'external', 'labels'])
const isExtension = (key: string) => key.startsWith('x-')

/** The 1-based line of the key at `path` (its key when it is a mapping's entry), when the file has it. */
function lineOf(doc: Document, counter: LineCounter, path: (string | number)[]): number | undefined {
  if (path.length === 0) return undefined
  const parent = path.length > 1 ? doc.getIn(path.slice(0, -1), true) : doc.contents
  const last = path.at(-1)
  const items = (parent as { items?: unknown[] } | null)?.items
  if (Array.isArray(items)) {
    if (typeof last === 'number') {
      const node = items[last] as { range?: [number, number, number] } | undefined
      if (node?.range) return counter.linePos(node.range[0]).line
    } else {
      for (const item of items) {
        const key = (item as { key?: { value?: unknown; range?: [number, number, number] } }).key
        if (key && String(key.value) === last && key.range) return counter.linePos(key.range[0]).line
      }
    }
  }
  return path.length > 1 ? lineOf(doc, counter, path.slice(0, -1)) : undefined
}

const splitPath = (path: string): (string | number)[] =>
  path
    .split(/\.|\[(\d+)\]/)
    .filter((p) => p !== undefined && p !== '')
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p))

export async function loadProject(input: LoadInput, validator: ComposeValidator): Promise<LoadResult> {
  const { parseDocument, LineCounter } = await import('yaml')
  const counter = new LineCounter()
  const issues: Issue[] = []
  const warnings: Issue[] = []
  const fail = () => ({ ok: false as const, issues, warnings })

  const envErrors: { line: number; message: string }[] = []
  const vars = parseEnvFile(input.env, envErrors)
  for (const e of envErrors) issues.push({ kind: 'env', path: '.env', line: e.line, message: e.message })

  const doc = parseDocument(input.compose, { lineCounter: counter, uniqueKeys: true, merge: true, prettyErrors: false })
  for (const err of doc.errors)
    issues.push({
      kind: 'yaml',
      path: '',
      line: counter.linePos(err.pos[0]).line,
      message: err.message.split('\n')[0]!,
    })
  if (issues.length) return fail()
  let raw: unknown
  try {
    raw = doc.toJS({ maxAliasCount: 100 })
  } catch (err) {
    issues.push({ kind: 'yaml', path: '', message: (err as Error).message })
    return fail()
  }
  if (cyclic(raw)) {
    issues.push({ kind: 'yaml', path: '', message: 'an alias refers to a node that holds it (a cycle)' })
    return fail()
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    issues.push({ kind: 'schema', path: '', line: 1, message: 'a compose file is a mapping with a services key' })
    return fail()
  }
  const at = (path: string) => lineOf(doc, counter, splitPath(path))

  const interpolation: InterpolationIssue[] = []
  const file = interpolateTree(raw, vars, interpolation) as Record<string, unknown>
  for (const i of interpolation)
    (i.warning ? warnings : issues).push({ kind: 'interpolation', path: i.path, line: at(i.path), message: i.message })
  if (issues.length) return fail()

  for (const e of await validator.validate(file)) issues.push({ ...e, kind: 'schema', line: at(e.path) })
  if (issues.length) return fail()

  const unsupported = (path: string, message?: string) =>
    issues.push({
      kind: 'unsupported',
      path,
      line: at(path),
      message: message ?? `${path} is not supported by hostd (remove it, or deploy with the compose CLI)`,
    })
  for (const key of Object.keys(file)) if (!TOP_KEYS.has(key) && !isExtension(key)) unsupported(key)
  if (file.name !== undefined && file.name !== input.name)
    unsupported('name', `name "${String(file.name)}" differs from the stack's name "${input.name}" (its folder's)`)

  const networks = new Map<string, NetworkModel>()
  for (const [key, value] of Object.entries((file.networks ?? {}) as Record<string, Record<string, unknown> | null>)) {
    const def = value ?? {}
    for (const k of Object.keys(def)) if (!NETWORK_KEYS.has(k) && !isExtension(k)) unsupported(`networks.${key}.${k}`)
    if (def.driver !== undefined && def.driver !== 'bridge')
      unsupported(`networks.${key}.driver`, `networks.${key}.driver: only the bridge driver is supported`)
    const external = isExternal(def.external)
    networks.set(key, {
      key,
      name: typeof def.name === 'string' ? def.name : external ? key : `${input.name}_${key}`,
      external,
      internal: def.internal === true,
      labels: labelMap(def.labels),
    })
  }
  const volumes = new Map<string, VolumeModel>()
  for (const [key, value] of Object.entries((file.volumes ?? {}) as Record<string, Record<string, unknown> | null>)) {
    const def = value ?? {}
    for (const k of Object.keys(def)) if (!VOLUME_KEYS.has(k) && !isExtension(k)) unsupported(`volumes.${key}.${k}`)
    const external = isExternal(def.external)
    volumes.set(key, {
      key,
      name: typeof def.name === 'string' ? def.name : external ? key : `${input.name}_${key}`,
      external,
      labels: labelMap(def.labels),
    })
  }

  const rawServices = (file.services ?? {}) as Record<string, Record<string, unknown> | null>
  const enabled = new Set([
    ...(vars.get('COMPOSE_PROFILES') ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean),
    ...(input.profiles ?? []),
  ])
  const active = Object.entries(rawServices).filter(([, s]) => {
    const profiles = (s?.profiles ?? []) as string[]
    return profiles.length === 0 || profiles.some((p) => enabled.has(p))
  })
  const activeNames = new Set(active.map(([name]) => name))
  const usesDefault = active.some(([, s]) => s?.networks === undefined && s?.network_mode === undefined)
  if (usesDefault && !networks.has('default'))
    networks.set('default', {
      key: 'default',
      name: `${input.name}_default`,
      external: false,
      internal: false,
      labels: {},
    })

  const services = new Map<string, ServiceModel>()
  for (const [name, def] of active) {
    const model = await translateService(
      { project: input.name, dir: input.dir, name, def: def ?? {}, vars, networks, volumes, readFile: input.readFile },
      (path, message) => unsupported(path, message),
      (path, message) => issues.push({ kind: 'reference', path, line: at(path), message: message ?? path }),
    )
    if (model) services.set(name, model)
  }
  for (const [name, svc] of services) {
    for (const dep of svc.dependsOn) {
      if (activeNames.has(dep.service)) continue
      if (!(dep.service in rawServices) || dep.required)
        issues.push({
          kind: 'reference',
          path: `services.${name}.depends_on`,
          line: at(`services.${name}.depends_on`),
          message: `service ${name} depends on ${dep.service}, which is ${dep.service in rawServices ? 'not active (its profiles are off)' : 'not defined'}`,
        })
    }
    svc.dependsOn = svc.dependsOn.filter((d) => activeNames.has(d.service))
  }
  const cycle = findCycle(services)
  if (cycle)
    issues.push({ kind: 'reference', path: 'services', message: `depends_on makes a cycle: ${cycle.join(' -> ')}` })
  if (issues.length) return fail()
  return {
    ok: true,
    project: {
      name: input.name,
      dir: input.dir,
      services,
      allServices: Object.keys(rawServices),
      networks,
      volumes,
      warnings,
    },
  }
}

function isExternal(value: unknown): boolean {
  return value === true || (value !== null && typeof value === 'object')
}

/** True when a parsed value holds itself (a YAML alias to one of its own ancestors). */
function cyclic(value: unknown, ancestors = new Set<object>()): boolean {
  if (value === null || typeof value !== 'object') return false
  if (ancestors.has(value)) return true
  ancestors.add(value)
  for (const v of Object.values(value)) if (cyclic(v, ancestors)) return true
  ancestors.delete(value)
  return false
}

function findCycle(services: Map<string, ServiceModel>): string[] | null {
  const state = new Map<string, 'visiting' | 'done'>()
  const stack: string[] = []
  const visit = (name: string): string[] | null => {
    if (state.get(name) === 'done') return null
    if (state.get(name) === 'visiting') return [...stack.slice(stack.indexOf(name)), name]
    state.set(name, 'visiting')
    stack.push(name)
    for (const dep of services.get(name)?.dependsOn ?? []) {
      const found = visit(dep.service)
      if (found) return found
    }
    stack.pop()
    state.set(name, 'done')
    return null
  }
  for (const name of services.keys()) {
    const found = visit(name)
    if (found) return found
  }
  return null
}
