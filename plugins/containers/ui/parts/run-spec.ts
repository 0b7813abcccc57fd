/**
 * The run form's values turned into a RunSpec, and the server's refusals turned back into messages at the
 * fields they concern (the role rules and the spec checks name what they refuse: "volume /srv is a host path",
 * "port "x" is not …", "/cpus must be …").
 */
import { type ApiError, FieldErrors, type FormValues } from '@hostd/ui'
import type { RunSpec } from '../../src/runspec.ts'
import { emptyRows, rowsToSpec, type Rows } from './rows.tsx'

type Mount = NonNullable<RunSpec['mounts']>[number]

/** Fields only admins see (the role rules let operators use none of what reaches the host). */
export const ADVANCED_FIELDS = [
  'entrypoint',
  'user',
  'capAdd',
  'dns',
  'mounts',
  'tmpfs',
  'devices',
  'extraArgs',
] as const
/** Form fields (ports, volumes and environment are rows: their errors show above the buttons, naming the row). */
export const BASIC_FIELDS = [
  'image',
  'name',
  'command',
  'cpus',
  'memory',
  'workdir',
  'network',
  'restartPolicy',
] as const

const text = (v: FormValues, key: string) => String(v[key] ?? '').trim()
const lines = (v: FormValues, key: string) =>
  text(v, key)
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
const words = (v: FormValues, key: string) =>
  text(v, key)
    .split(/[\s,]+/)
    .filter(Boolean)

/** `type=bind,source=/srv,target=/srv,readonly`, the way `docker run --mount` reads it. */
export function parseMount(line: string): Mount {
  const mount: Partial<Mount> = {}
  for (const part of line.split(',')) {
    const eq = part.indexOf('=')
    const key = (eq < 0 ? part : part.slice(0, eq)).trim()
    const value = eq < 0 ? undefined : part.slice(eq + 1).trim()
    if (key === 'type') {
      if (value !== 'bind' && value !== 'volume' && value !== 'tmpfs')
        throw new Error(`"${line}": type is bind, volume or tmpfs`)
      mount.type = value
    } else if (key === 'source' || key === 'src') mount.source = value ?? ''
    else if (key === 'target' || key === 'destination' || key === 'dst') mount.target = value ?? ''
    else if (key === 'readonly' || key === 'ro') {
      if (value !== undefined && !['true', '1', 'false', '0'].includes(value))
        throw new Error(`"${line}": readonly is true or false`)
      mount.readOnly = value === undefined || value === 'true' || value === '1'
    } else throw new Error(`"${line}": ${key || 'an empty part'} is not type, source, target or readonly`)
  }
  if (!mount.type) throw new Error(`"${line}" needs a type (bind, volume or tmpfs)`)
  if (!mount.target) throw new Error(`"${line}" needs a target`)
  return mount as Mount
}

/**
 * Builds the RunSpec from the form's fields and its rows (ports, volumes, environment); empty fields are left out
 * (the server's defaults apply). Throws FieldErrors for what it cannot read, and an Error naming a row's problem.
 */
export function buildSpec(v: FormValues, advanced: boolean, rows: Rows = emptyRows()): RunSpec {
  const spec: Record<string, unknown> = { image: text(v, 'image'), ...rowsToSpec(rows, advanced) }
  const errors: Record<string, string> = {}
  const set = (key: string, value: unknown) => {
    if (value !== '' && !(Array.isArray(value) && value.length === 0)) spec[key] = value
  }
  set('name', text(v, 'name'))
  set('command', text(v, 'command'))
  if (text(v, 'cpus')) {
    const cpus = Number(text(v, 'cpus'))
    if (!(cpus > 0)) errors.cpus = 'Give a number above 0, such as 0.5 or 2'
    spec.cpus = cpus
  }
  set('memory', text(v, 'memory'))
  set('workdir', text(v, 'workdir'))
  set('network', text(v, 'network'))
  if (text(v, 'restartPolicy')) spec.restartPolicy = text(v, 'restartPolicy')
  if (advanced) {
    set('entrypoint', text(v, 'entrypoint'))
    set('user', text(v, 'user'))
    set('capAdd', words(v, 'capAdd'))
    set('dns', words(v, 'dns'))
    const mounts: Mount[] = []
    for (const line of lines(v, 'mounts')) {
      try {
        mounts.push(parseMount(line))
      } catch (err) {
        errors.mounts ??= (err as Error).message
      }
    }
    set('mounts', mounts)
    set('tmpfs', lines(v, 'tmpfs'))
    set('devices', lines(v, 'devices'))
    set('extraArgs', text(v, 'extraArgs'))
  }
  if (Object.keys(errors).length) throw new FieldErrors(errors)
  return spec as RunSpec
}

/** A reason of the role rules ("volume /srv is a host path") -> the field it came from. */
function reasonField(reason: string): string {
  if (/^volume /.test(reason)) return 'volumes'
  if (/^mount /.test(reason)) return 'mounts'
  if (/^device /.test(reason)) return 'devices'
  if (/^capability /.test(reason)) return 'capAdd'
  if (/^host network namespace|^network /.test(reason)) return 'network'
  return 'extraArgs' // other namespaces, privileged, security options: only docker flags can ask for those
}

/** A spec check's message -> its field: each names what it refuses, first ("port …", "/cpus …", "env.KEY …"). */
const INVALID: [RegExp, string][] = [
  [/^(extraArgs|--|Labels under)/, 'extraArgs'],
  [/^\/?ports?\b/, 'ports'],
  [/^\/?volumes?\b/, 'volumes'],
  [/^\/?devices?\b/, 'devices'],
  [/^\/?mounts?\b/, 'mounts'],
  [/^\/?tmpfs\b/, 'tmpfs'],
  [/^\/?env\b/, 'env'],
  [/^\/?workdir\b/, 'workdir'],
  [/^\/?cpus\b/, 'cpus'],
  [/^\/?memory\b|is not a size|too large a size/, 'memory'],
  [/^\/?name\b/, 'name'],
  [/^restart policy|^\/restartPolicy/, 'restartPolicy'],
  [/^\/?dns\b/, 'dns'],
  [/^\/?capAdd\b/, 'capAdd'],
  [/^\/?entrypoint\b/, 'entrypoint'],
  [/^\/?user\b/, 'user'],
  [/^\/?command\b/, 'command'],
  [/^\/?network\b/, 'network'],
  [/^\/?image\b/, 'image'],
]

const sentence = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)

/**
 * The field errors an ApiError of the install socket (or POST /api/containers) maps to, among `shown` fields, or
 * null when it concerns none of them (the form shows it above its buttons then).
 */
export function fieldErrorsFor(err: ApiError, spec: RunSpec, shown: readonly string[]): FieldErrors | null {
  const fields: Record<string, string> = {}
  const message = err.message
  switch (err.code) {
    case 'HOSTD_CONTAINERS_IMAGE_REFERENCE_INVALID':
    case 'HOSTD_CONTAINERS_PULL_FAILED':
    case 'HOSTD_CONTAINERS_IMAGE_NOT_FOUND':
    case 'HOSTD_CONTAINERS_REGISTRY_UNREACHABLE':
    case 'HOSTD_CONTAINERS_REGISTRY_RATE_LIMITED':
      fields.image = message
      break
    case 'HOSTD_CONTAINERS_NAME_IN_USE':
      fields.name = message
      break
    case 'HOSTD_CONTAINERS_COMMAND_NOT_FOUND':
      fields[spec.entrypoint ? 'entrypoint' : 'command'] = message
      break
    case 'HOSTD_CONTAINERS_MOUNT_SOURCE_MISSING':
      fields.mounts = message
      break
    case 'HOSTD_CONTAINERS_NETWORK_NOT_FOUND':
    case 'HOSTD_CONTAINERS_HOST_NAMESPACE_REFUSED':
      fields.network = message
      break
    case 'HOSTD_CONTAINERS_CONFLICT':
      if (/name/i.test(message)) fields.name = message
      break
    case 'HOSTD_CONTAINERS_ENGINE_ERROR':
      if (/port|address already in use/i.test(message)) fields.ports = message
      break
    case 'HOSTD_CONTAINERS_HOST_ROOT_REFUSED': {
      const source = /\(([^)]*)\)/.exec(message)?.[1] ?? ''
      const inVolumes = (spec.volumes ?? []).some((v) =>
        typeof v === 'string' ? v.startsWith(`${source}:`) : v.source === source,
      )
      const inMounts = (spec.mounts ?? []).some((m) => m.source === source)
      fields[inVolumes ? 'volumes' : inMounts ? 'mounts' : 'extraArgs'] = message
      break
    }
    case 'HOSTD_CONTAINERS_SPEC_NEEDS_ADMIN': {
      const reasons = /reaches the host \((.*)\): it needs the admin role; you are (\w+)/.exec(message)
      if (!reasons) break
      const byField: Record<string, string[]> = {}
      for (const reason of reasons[1]!.split('; ')) (byField[reasonField(reason)] ??= []).push(reason)
      for (const [field, list] of Object.entries(byField))
        fields[field] = `${sentence(list.join('; '))}: only an admin may run this (you are ${reasons[2]})`
      break
    }
    case 'HOSTD_CONTAINERS_SPEC_INVALID':
    case 'HOSTD_REQUEST_INVALID': {
      const field = INVALID.find(([pattern]) => pattern.test(message))?.[1]
      if (field) fields[field] = sentence(message.replace(/^\//, ''))
      else if (/^unterminated/.test(message)) {
        // An unbalanced quote: in whichever of the shell-split fields holds the quoted text.
        const fragment = /in "(.*)"$/.exec(message)?.[1] ?? ''
        const owner = (['command', 'entrypoint', 'extraArgs'] as const).find(
          (k) => typeof spec[k] === 'string' && (spec[k] as string).startsWith(fragment),
        )
        if (owner) fields[owner] = sentence(message)
      }
      break
    }
  }
  const visible = Object.fromEntries(Object.entries(fields).filter(([field]) => shown.includes(field)))
  return Object.keys(visible).length ? new FieldErrors(visible) : null
}
