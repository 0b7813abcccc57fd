/** A schema-valid RunSpec into the one flat spec every creating path validates and creates from. */
import { isIP } from 'node:net'
import { ContainerErrors } from '../errors.ts'
import { parseImageReference } from '../image-reference.ts'
import type { NormalizedSpec, RunSpec } from '../runspec.ts'
import { applyExtraArgs } from './extra-args.ts'
import { shellSplit } from './shell-words.ts'
import { parseDevice, parsePort, parseSize, parseTmpfs, parseVolume } from './values.ts'

const words = (v: string | string[] | undefined): string[] | undefined =>
  v === undefined ? undefined : Array.isArray(v) ? v : shellSplit(v)

/**
 * Every string of the spec (values and keys) must reach the engine as it was sent: a NUL would end it early (the
 * engine and the kernel take C strings) and a lone surrogate cannot be encoded as UTF-8 (it would arrive as U+FFFD).
 */
function checkText(value: unknown, path: string): void {
  if (typeof value === 'string') {
    if (value.includes('\0')) throw ContainerErrors.invalidSpec(`${path} holds a NUL character`)
    if (!value.isWellFormed())
      throw ContainerErrors.invalidSpec(`${path} holds a lone UTF-16 surrogate (not valid Unicode)`)
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => checkText(item, `${path}[${i}]`))
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      checkText(key, `${path} key`)
      checkText(item, `${path}.${key}`)
    }
  }
}

/** RunSpec (already schema-valid) -> the flat spec. Throws 400 on values the schema cannot check. */
export function normalizeSpec(input: RunSpec): NormalizedSpec {
  for (const [field, value] of Object.entries(input)) if (field !== 'image') checkText(value, field)
  parseImageReference(input.image, 'image')
  const env =
    input.env === undefined
      ? []
      : Array.isArray(input.env)
        ? [...input.env]
        : Object.entries(input.env).map(([k, v]) => `${k}=${v}`)
  for (const e of env)
    if (!/^[^=\0]+=/.test(e) && !/^[^=\0]+$/.test(e))
      throw ContainerErrors.invalidSpec(`env entry "${e.slice(0, 40)}" is not NAME=value`)
  const spec: NormalizedSpec = {
    image: input.image,
    name: input.name,
    command: words(input.command),
    entrypoint: words(input.entrypoint),
    ports: (input.ports ?? []).map(parsePort),
    env,
    volumes: (input.volumes ?? []).map(parseVolume),
    mounts: (input.mounts ?? []).map((m) => ({
      type: m.type,
      source: m.source ?? '',
      target: m.target,
      readOnly: m.readOnly ?? false,
    })),
    tmpfs: parseTmpfs(input.tmpfs),
    devices: (input.devices ?? []).map(parseDevice),
    cpus: input.cpus,
    memory: input.memory === undefined ? undefined : parseSize(input.memory),
    workdir: input.workdir,
    network: input.network,
    restartPolicy: input.restartPolicy,
    user: input.user,
    capAdd: [...(input.capAdd ?? [])],
    capDrop: [],
    dns: [...(input.dns ?? [])],
    labels: {},
    extraHosts: [],
    privileged: false,
    securityOpt: [],
    readOnly: false,
    init: false,
    hadExtraArgs: false,
  }
  const extra = words(input.extraArgs)
  if (extra && extra.length > 0) {
    spec.hadExtraArgs = true
    applyExtraArgs(spec, extra)
  }
  if (spec.workdir !== undefined && !spec.workdir.startsWith('/'))
    throw ContainerErrors.invalidSpec('workdir must be an absolute path')
  if (spec.cpus !== undefined && !(spec.cpus > 0 && spec.cpus <= 1024))
    throw ContainerErrors.invalidSpec('cpus must be a number above 0')
  if (spec.name !== undefined && !/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$/.test(spec.name))
    throw ContainerErrors.invalidSpec('name may hold letters, digits, _ . -')
  if (spec.restartPolicy !== undefined && !/^(no|always|unless-stopped|on-failure(:[0-9]+)?)$/.test(spec.restartPolicy))
    throw ContainerErrors.invalidSpec(`restart policy "${spec.restartPolicy}" is not known`)
  for (const m of spec.mounts)
    if (!m.target.startsWith('/')) throw ContainerErrors.invalidSpec(`mount target "${m.target}" must be absolute`)
  for (const server of spec.dns)
    if (isIP(server) === 0) throw ContainerErrors.invalidSpec(`dns "${server}" is not an IP address`)
  return spec
}
