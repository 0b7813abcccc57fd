/**
 * Catalog entries: the checks a schema cannot express (run when a source loads, entry by entry), and rendering an
 * entry's form fields into its RunSpec at install. Templates are `{{fields.<key>}}`, allowed only where a value
 * cannot change the shape of the spec: env values, command/entrypoint array elements, ports, volumes.
 */
import { posix } from 'node:path'
import valid from 'semver/functions/valid.js'
import type { RunSpec } from './containers.ts'
import { CatalogErrors } from './errors.ts'
import type { CatalogEntry, Field } from './schemas.ts'

const TEMPLATE = /\{\{\s*fields\.([a-zA-Z][a-zA-Z0-9_]*)\s*\}\}/g
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/
/** What a value substituted into a ports or volumes entry may hold (numbers, names, absolute paths): no `:` or `,`. */
const SPEC_SAFE = /^[A-Za-z0-9._/-]*$/

function templatesIn(text: string): string[] {
  return [...text.matchAll(TEMPLATE)].map((m) => m[1]!)
}
function hasBraces(text: string): boolean {
  return text.replace(TEMPLATE, '').includes('{{')
}

/** A pinned reference: a digest, or a tag that is not `latest`. */
export function isPinned(image: string): boolean {
  if (image.includes('@sha256:')) return true
  const lastSlash = image.lastIndexOf('/')
  const colon = image.lastIndexOf(':')
  if (colon <= lastSlash) return false
  const tag = image.slice(colon + 1)
  return tag !== '' && tag !== 'latest'
}

/** Checks an entry beyond its schema. Returns the reason it is unusable, or null. */
export function entryProblem(entry: CatalogEntry): string | null {
  if (!valid(entry.version)) return `version "${entry.version}" is not semver (e.g. 1.2.0)`
  if (!entry.runSpec === !entry.compose)
    return 'an entry has a runSpec (one container) or a compose file (a stack, for several): one of the two'
  if (entry.runSpec && !isPinned(entry.runSpec.image))
    return `image "${entry.runSpec.image}" is not pinned: give a tag other than latest, or a digest`
  for (const url of [entry.icon, entry.website, ...(entry.gallery ?? [])]) {
    if (url !== undefined && !/^https:\/\//.test(url)) return `"${url.slice(0, 80)}" is not an https: URL`
  }
  const fields = new Map<string, Field>()
  for (const f of entry.fields ?? []) {
    if (fields.has(f.key)) return `field "${f.key}" is declared twice`
    fields.set(f.key, f)
    if (f.type === 'select' && !f.options?.length) return `select field "${f.key}" has no options`
    if (f.pattern !== undefined) {
      if (f.type !== 'text' && f.type !== 'password')
        return `field "${f.key}": pattern applies to text and password fields only`
      try {
        new RegExp(f.pattern)
      } catch {
        return `field "${f.key}": pattern is not a valid regular expression`
      }
    }
    if (f.default !== undefined) {
      try {
        checkValue(f, f.default)
      } catch (err) {
        return `field "${f.key}": default ${(err as Error).message}`
      }
    }
  }
  // A stack's fields reach its compose file through its .env: the stacks plugin checks the file at install.
  if (!entry.runSpec) return null
  // Where templates may appear, and that each names a declared field.
  const spec = entry.runSpec
  const allowed: [string, string][] = [
    ...Object.entries(spec.env ?? {}).map(([k, v]) => [`env.${k}`, v] as [string, string]),
    ...(spec.ports ?? []).map((v, i) => [`ports[${i}]`, v] as [string, string]),
    ...(spec.volumes ?? []).map((v, i) => [`volumes[${i}]`, v] as [string, string]),
    ...(['command', 'entrypoint'] as const).flatMap((k) =>
      Array.isArray(spec[k]) ? (spec[k] as string[]).map((v, i) => [`${k}[${i}]`, v] as [string, string]) : [],
    ),
  ]
  for (const [where, text] of allowed) {
    if (hasBraces(text)) return `${where}: "{{" that is not a {{fields.<key>}} template`
    for (const key of templatesIn(text)) {
      const field = fields.get(key)
      if (!field) return `${where} uses {{fields.${key}}}, which is not a declared field`
      if (field.type === 'path' && !where.startsWith('volumes['))
        return `${where}: path field "${key}" may only be a volume source`
    }
  }
  const elsewhere = JSON.stringify({
    ...spec,
    env: undefined,
    ports: undefined,
    volumes: undefined,
    command: Array.isArray(spec.command) ? undefined : spec.command,
    entrypoint: Array.isArray(spec.entrypoint) ? undefined : spec.entrypoint,
  })
  if (elsewhere.includes('{{'))
    return 'templates are allowed only in env values, ports, volumes and command/entrypoint given as arrays'
  return null
}

/** Throws (with a message naming the problem, never the value) unless `value` fits `field`; answers its text. */
export function checkValue(field: Field, value: unknown): string {
  switch (field.type) {
    case 'text':
    case 'password': {
      if (typeof value !== 'string') throw new Error('must be a string')
      if (value.length > 1024) throw new Error('is longer than 1024 characters')
      if (CONTROL.test(value)) throw new Error('holds a control character')
      if (field.pattern !== undefined && value !== '' && !new RegExp(`^(?:${field.pattern})$`).test(value))
        throw new Error(`does not match ${field.pattern}`)
      return value
    }
    case 'number': {
      if (typeof value !== 'number' || !Number.isFinite(value)) throw new Error('must be a number')
      if (field.min !== undefined && value < field.min) throw new Error(`must be at least ${field.min}`)
      if (field.max !== undefined && value > field.max) throw new Error(`must be at most ${field.max}`)
      return String(value)
    }
    case 'port': {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535)
        throw new Error('must be a port number 1..65535')
      return String(value)
    }
    case 'select': {
      if (typeof value !== 'string' || !field.options!.some((o) => o.value === value))
        throw new Error(`must be one of ${field.options!.map((o) => o.value).join(', ')}`)
      return value
    }
    case 'boolean': {
      if (typeof value !== 'boolean') throw new Error('must be true or false')
      return String(value)
    }
    case 'path': {
      if (typeof value !== 'string' || !value.startsWith('/')) throw new Error('must be an absolute path')
      if (value.length > 4096 || CONTROL.test(value) || /[:,]/.test(value))
        throw new Error('holds a character a path here may not (control, : or ,)')
      if (value.split('/').includes('..')) throw new Error('may not contain ..')
      return posix.normalize(value).replace(/(.)\/+$/, '$1')
    }
  }
  throw new Error('has an unknown type')
}

/** Values from the install request (and defaults) checked against the fields; a 400 names the field, never the value. */
export function resolveValues(entry: CatalogEntry, given: Record<string, unknown>): Map<string, string> {
  const fields = entry.fields ?? []
  const unknown = Object.keys(given).filter((k) => !fields.some((f) => f.key === k))
  if (unknown.length)
    throw CatalogErrors.valuesInvalid(`Unknown field${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`)
  const out = new Map<string, string>()
  for (const field of fields) {
    const value = given[field.key] ?? field.default
    if (value === undefined || value === '') {
      if (field.required) throw CatalogErrors.valuesInvalid(`${field.label} (${field.key}) is required`)
      out.set(field.key, '')
      continue
    }
    try {
      out.set(field.key, checkValue(field, value))
    } catch (err) {
      throw CatalogErrors.valuesInvalid(`${field.label} (${field.key}) ${(err as Error).message}`)
    }
  }
  return out
}

function substitute(text: string, values: Map<string, string>, where: string, specSafe: boolean): string {
  return text.replace(TEMPLATE, (_m, key: string) => {
    const value = values.get(key) ?? ''
    if (specSafe && !SPEC_SAFE.test(value))
      throw CatalogErrors.valuesInvalid(
        `The value of ${key} cannot go into ${where}: use letters, digits, . _ / - only`,
      )
    return value
  })
}

/** A ports or volumes entry whose template renders a field to "" is dropped: that is how an optional mount or port is left out. */
function renderList(list: string[] | undefined, values: Map<string, string>, name: string): string[] | undefined {
  if (!list) return undefined
  const out: string[] = []
  list.forEach((item, i) => {
    if (templatesIn(item).some((key) => values.get(key) === '')) return
    out.push(substitute(item, values, `${name}[${i}]`, true))
  })
  return out
}

/** The entry's RunSpec with the values put in, and the container name. */
export function renderRunSpec(entry: CatalogEntry, given: Record<string, unknown>, name?: string): RunSpec {
  const values = resolveValues(entry, given)
  const spec = structuredClone(entry.runSpec) as RunSpec
  spec.name = name ?? entry.runSpec?.name ?? entry.id
  if (spec.env)
    spec.env = Object.fromEntries(
      Object.entries(spec.env).map(([k, v]) => [k, substitute(v, values, `env.${k}`, false)]),
    )
  spec.ports = renderList(spec.ports, values, 'ports')
  spec.volumes = renderList(spec.volumes, values, 'volumes')
  for (const key of ['command', 'entrypoint'] as const) {
    const words = spec[key]
    if (Array.isArray(words)) spec[key] = words.map((w, i) => substitute(w, values, `${key}[${i}]`, false))
  }
  for (const key of Object.keys(spec) as (keyof RunSpec)[]) if (spec[key] === undefined) delete spec[key]
  return spec
}

/** A hint for the page: the entry mounts host paths or adds capabilities, so the role rules will ask for admin. */
export function needsAdmin(entry: CatalogEntry): boolean {
  if ((entry.fields ?? []).some((f) => f.type === 'path')) return true
  if (!entry.runSpec) return false
  if ((entry.runSpec.capAdd ?? []).length > 0) return true
  return (entry.runSpec.volumes ?? []).some((v) => v.startsWith('/'))
}

/**
 * A stack app's `.env`: each field's value (given or its default) under the field's key; single-quoted (taken as it
 * is, no `$` expansion) unless it holds a quote or a line break, then double-quoted with escapes.
 */
export function renderEnv(entry: CatalogEntry, given: Record<string, unknown>): string {
  const quote = (v: string) =>
    /['\n\r]/.test(v)
      ? `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\r/g, '\\r')}"`
      : `'${v}'`
  return [...resolveValues(entry, given)].map(([k, v]) => `${k}=${quote(v)}\n`).join('')
}
