/**
 * The RunSpec: its schema (strict: unknown fields are 400), and its normalization into one flat spec that every
 * creating path (REST, install socket, catalog, update) validates with the same role rules (policy.ts) and turns
 * into Engine API options (create.ts). `extraArgs` are docker-run flags parsed by an allowlist into that same
 * spec: never handed to a shell or to the docker CLI.
 */
import { isIP } from 'node:net'
import { Type, type Static } from '@hostd/sdk'
import { ContainerErrors } from './errors.ts'
import { ImageReferenceSchema, parseImageReference } from './image-reference.ts'

const Str = (max = 4096) => Type.String({ maxLength: max })
const StrList = (max = 256) => Type.Array(Str(), { maxItems: max })

export const PortSpecSchema = Type.Union([
  Type.String({ maxLength: 128, description: '[hostAddress:][hostPort:]containerPort[/proto], like docker run -p' }),
  Type.Object(
    {
      hostAddress: Type.Optional(Str(64)),
      hostPort: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
      containerPort: Type.Integer({ minimum: 1, maximum: 65535 }),
      proto: Type.Optional(Type.Union([Type.Literal('tcp'), Type.Literal('udp'), Type.Literal('sctp')])),
    },
    { additionalProperties: false },
  ),
])

export const VolumeSpecSchema = Type.Union([
  Type.String({
    maxLength: 4096,
    description:
      'source:target[:options], like docker run -v (options: ro, rw, z, Z, nocopy, a propagation or consistency mode, comma-separated); a source starting with / is a host path',
  }),
  Type.Object(
    {
      source: Str(),
      target: Str(),
      readOnly: Type.Optional(Type.Boolean()),
    },
    { additionalProperties: false },
  ),
])

export const MountSpecSchema = Type.Object(
  {
    type: Type.Union([Type.Literal('bind'), Type.Literal('volume'), Type.Literal('tmpfs')]),
    source: Type.Optional(Str()),
    target: Str(),
    readOnly: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)

export const RunSpecSchema = Type.Object(
  {
    image: ImageReferenceSchema,
    name: Type.Optional(Type.String({ pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$' })),
    command: Type.Optional(
      Type.Union([Str(16384), StrList(1024)], {
        description: 'a string split into words like a shell would (quotes, backslashes; no expansion), or an array',
      }),
    ),
    ports: Type.Optional(Type.Array(PortSpecSchema, { maxItems: 256 })),
    env: Type.Optional(
      Type.Union([Type.Record(Type.String({ pattern: '^[^=\\u0000]+$' }), Str(32768)), StrList(1024)]),
    ),
    volumes: Type.Optional(Type.Array(VolumeSpecSchema, { maxItems: 256 })),
    cpus: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1024 })),
    memory: Type.Optional(
      Type.Union(
        [
          Type.Integer({ minimum: 6 * 1024 * 1024, maximum: Number.MAX_SAFE_INTEGER }),
          Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?[bkmgBKMG]?$' }),
        ],
        { description: 'bytes, or a docker-style size such as 512m' },
      ),
    ),
    workdir: Type.Optional(Str(4096)),
    network: Type.Optional(Type.String({ maxLength: 256 })),
    restartPolicy: Type.Optional(Type.String({ pattern: '^(no|always|unless-stopped|on-failure(:[0-9]+)?)$' })),
    entrypoint: Type.Optional(Type.Union([Str(16384), StrList(1024)])),
    user: Type.Optional(Type.String({ maxLength: 256 })),
    capAdd: Type.Optional(StrList(64)),
    dns: Type.Optional(StrList(16)),
    mounts: Type.Optional(Type.Array(MountSpecSchema, { maxItems: 256 })),
    tmpfs: Type.Optional(StrList(64)),
    devices: Type.Optional(StrList(64)),
    extraArgs: Type.Optional(
      Type.Union([Str(16384), StrList(256)], { description: 'docker run flags (allowlisted), string or array' }),
    ),
  },
  { additionalProperties: false },
)
export type RunSpec = Static<typeof RunSpecSchema>

export interface PortBinding {
  hostAddress: string
  hostPort: number
  containerPort: number
  proto: string
}
export interface VolumeBinding {
  source: string
  target: string
  /** The -v options exactly as given (ro, rw, z, Z, nocopy, propagation, consistency), passed on as they are. */
  options: string[]
  /** A host path (starts with / or .) rather than a named volume. */
  hostPath: boolean
}
export interface MountBinding {
  type: 'bind' | 'volume' | 'tmpfs'
  source: string
  target: string
  readOnly: boolean
}

/** The one flat spec every path validates and creates from. */
export interface NormalizedSpec {
  image: string
  name?: string
  command?: string[]
  entrypoint?: string[]
  ports: PortBinding[]
  env: string[]
  volumes: VolumeBinding[]
  mounts: MountBinding[]
  tmpfs: Record<string, string>
  devices: { host: string; container: string; permissions: string }[]
  cpus?: number
  memory?: number
  workdir?: string
  network?: string
  restartPolicy?: string
  user?: string
  capAdd: string[]
  capDrop: string[]
  dns: string[]
  labels: Record<string, string>
  hostname?: string
  extraHosts: string[]
  privileged: boolean
  pidMode?: string
  ipcMode?: string
  utsMode?: string
  usernsMode?: string
  cgroupnsMode?: string
  securityOpt: string[]
  readOnly: boolean
  init: boolean
  shmSize?: number
  /** The spec carried extraArgs (admin only, whatever they hold). */
  hadExtraArgs: boolean
}

/** Splits a command line into words the way a POSIX shell would, without any expansion. */
export function shellSplit(line: string): string[] {
  const words: string[] = []
  let word = ''
  let inWord = false
  let quote: '"' | "'" | null = null
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!
    if (quote === "'") {
      if (ch === "'") quote = null
      else word += ch
      continue
    }
    if (quote === '"') {
      if (ch === '"') quote = null
      else if (ch === '\\' && i + 1 < line.length && '"\\$`\n'.includes(line[i + 1]!)) {
        if (line[i + 1] !== '\n') word += line[i + 1]
        i++
      } else word += ch
      continue
    }
    if (ch === "'" || ch === '"') {
      quote = ch
      inWord = true
    } else if (ch === '\\') {
      if (i + 1 < line.length) {
        if (line[i + 1] !== '\n') {
          word += line[i + 1]
          inWord = true
        }
        i++
      }
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(word)
      word = ''
      inWord = false
    } else {
      word += ch
      inWord = true
    }
  }
  if (quote) throw ContainerErrors.invalidSpec(`unterminated ${quote} quote in "${line.slice(0, 80)}"`)
  if (inWord) words.push(word)
  return words
}

const words = (v: string | string[] | undefined): string[] | undefined =>
  v === undefined ? undefined : Array.isArray(v) ? v : shellSplit(v)

export function parseSize(value: string | number): number {
  if (typeof value === 'number') return value
  const m = /^([0-9]+(?:\.[0-9]+)?)([bkmgBKMG]?)$/.exec(value)
  if (!m) throw ContainerErrors.invalidSpec(`"${value}" is not a size (e.g. 512m)`)
  const unit = { '': 1, b: 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[m[2]!.toLowerCase() as '' | 'b' | 'k' | 'm' | 'g']
  const bytes = Math.floor(Number(m[1]) * unit)
  // The engine takes an int64; past the safe integers it answers a JSON error (a 502 before this check).
  if (!Number.isSafeInteger(bytes)) throw ContainerErrors.invalidSpec(`"${value}" is too large a size`)
  return bytes
}

export function parsePort(
  value: string | { hostAddress?: string; hostPort?: number; containerPort: number; proto?: string },
): PortBinding {
  if (typeof value !== 'string') {
    return {
      hostAddress: value.hostAddress ?? '',
      hostPort: value.hostPort ?? 0,
      containerPort: value.containerPort,
      proto: value.proto ?? 'tcp',
    }
  }
  const m =
    /^(?:(\[[0-9a-fA-F:]+\]|[0-9]{1,3}(?:\.[0-9]{1,3}){3}):)?(?:([0-9]{1,5})?:)?([0-9]{1,5})(?:\/(tcp|udp|sctp))?$/.exec(
      value,
    )
  if (!m) throw ContainerErrors.invalidSpec(`port "${value}" is not [hostAddress:][hostPort:]containerPort[/proto]`)
  const hostPort = m[2] ? Number(m[2]) : 0
  const containerPort = Number(m[3])
  if (hostPort > 65535 || containerPort < 1 || containerPort > 65535)
    throw ContainerErrors.invalidSpec(`port "${value}" is out of range`)
  return { hostAddress: (m[1] ?? '').replace(/^\[|\]$/g, ''), hostPort, containerPort, proto: m[4] ?? 'tcp' }
}

const VOLUME_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/

/** The engine's -v options (volume/mounts_linux.go): access, SELinux label, copy, propagation and consistency modes. */
const VOLUME_OPTIONS = new Set([
  'ro',
  'rw',
  'z',
  'Z',
  'nocopy',
  'shared',
  'rshared',
  'slave',
  'rslave',
  'private',
  'rprivate',
  'consistent',
  'cached',
  'delegated',
])

export function parseVolume(value: string | { source: string; target: string; readOnly?: boolean }): VolumeBinding {
  let source: string
  let target: string
  let options: string[] = []
  if (typeof value === 'string') {
    const parts = value.split(':')
    if (parts.length < 2 || parts.length > 3)
      throw ContainerErrors.invalidSpec(`volume "${value}" is not source:target[:options]`)
    source = parts[0]!
    target = parts[1]!
    if (parts[2] !== undefined) {
      options = parts[2].split(',')
      for (const opt of options)
        if (!VOLUME_OPTIONS.has(opt))
          throw ContainerErrors.invalidSpec(
            `volume option "${opt}" is not supported (${[...VOLUME_OPTIONS].join(', ')})`,
          )
    }
  } else {
    source = value.source
    target = value.target
    if (value.readOnly) options = ['ro']
    // The engine reads a bind as source:target[:options]: a colon in either would change its meaning.
    if (source.includes(':') || target.includes(':'))
      throw ContainerErrors.invalidSpec(`volume ${source} -> ${target}: a source or target may not hold ":"`)
  }
  if (!target.startsWith('/')) throw ContainerErrors.invalidSpec(`volume target "${target}" must be an absolute path`)
  const hostPath = source.startsWith('/') || source.startsWith('.') || source.startsWith('~')
  if (!hostPath && !VOLUME_NAME.test(source))
    throw ContainerErrors.invalidSpec(`volume source "${source}" is neither a volume name nor a host path`)
  if (source.startsWith('.') || source.startsWith('~'))
    throw ContainerErrors.invalidSpec(`volume source "${source}": give host paths as absolute paths`)
  return { source, target, options, hostPath }
}

/** r, w and m, each at most once (the engine's device cgroup permissions). */
const isDeviceMode = (mode: string) => /^[rwm]{1,3}$/.test(mode) && new Set(mode).size === mode.length

/** host[:container][:permissions], read like docker run --device (a second part that is a mode is the mode). */
function parseDevice(value: string): { host: string; container: string; permissions: string } {
  const parts = value.split(':')
  if (parts.length > 3) throw ContainerErrors.invalidSpec(`device "${value}" is not host[:container][:permissions]`)
  const [host, second, third] = parts as [string, string | undefined, string | undefined]
  if (!host.startsWith('/'))
    throw ContainerErrors.invalidSpec(`device "${value}" must start with an absolute host path`)
  let container = host
  let permissions = 'rwm'
  if (third !== undefined) {
    container = second!
    permissions = third
  } else if (second !== undefined) {
    if (isDeviceMode(second)) permissions = second
    else container = second
  }
  if (!container.startsWith('/'))
    throw ContainerErrors.invalidSpec(`device "${value}": the container path must be absolute`)
  if (!isDeviceMode(permissions))
    throw ContainerErrors.invalidSpec(`device "${value}": permissions are r, w and m (e.g. rwm)`)
  return { host, container, permissions }
}

/** --mount keys hostd translates exactly (lower case, as the docker CLI reads them); any other key is a 400. */
const MOUNT_KEYS = new Map<string, 'type' | 'source' | 'target' | 'readonly'>([
  ['type', 'type'],
  ['source', 'source'],
  ['src', 'source'],
  ['target', 'target'],
  ['destination', 'target'],
  ['dst', 'target'],
  ['readonly', 'readonly'],
  ['ro', 'readonly'],
])
/** The values Go's strconv.ParseBool takes, as docker reads `readonly=`. */
const BOOLEAN = new Map<string, boolean>([
  ...['1', 't', 'T', 'true', 'TRUE', 'True'].map((v) => [v, true] as const),
  ...['0', 'f', 'F', 'false', 'FALSE', 'False'].map((v) => [v, false] as const),
])

function parseMountFlag(value: string): MountBinding {
  if (value.includes('"')) throw ContainerErrors.invalidSpec(`--mount "${value}": quoted fields are not supported`)
  const fields: Partial<Record<'type' | 'source' | 'target' | 'readonly', string>> = {}
  for (const part of value.split(',')) {
    const eq = part.indexOf('=')
    const given = eq < 0 ? part : part.slice(0, eq)
    const key = MOUNT_KEYS.get(given.toLowerCase())
    if (!key) {
      throw ContainerErrors.invalidSpec(
        `--mount "${value}": "${given}" is not supported (type, source, target, readonly); to mount a volume with driver options, create the volume first and mount it by name`,
      )
    }
    if (fields[key] !== undefined) throw ContainerErrors.invalidSpec(`--mount "${value}": ${key} is given twice`)
    if (eq < 0 && key !== 'readonly') throw ContainerErrors.invalidSpec(`--mount "${value}": ${given} needs a value`)
    fields[key] = eq < 0 ? 'true' : part.slice(eq + 1)
  }
  const type = (fields.type ?? 'volume') as MountBinding['type']
  if (!['bind', 'volume', 'tmpfs'].includes(type))
    throw ContainerErrors.invalidSpec(`mount type "${type}" is not supported`)
  if (!fields.target) throw ContainerErrors.invalidSpec(`mount "${value}" has no target`)
  const readOnly = fields.readonly === undefined ? false : BOOLEAN.get(fields.readonly)
  if (readOnly === undefined)
    throw ContainerErrors.invalidSpec(`--mount "${value}": readonly is true or false, not "${fields.readonly}"`)
  return { type, source: fields.source ?? '', target: fields.target, readOnly }
}

/** host:ip (or host-gateway), as docker run --add-host reads it. */
function parseExtraHost(value: string): string {
  const colon = value.indexOf(':')
  const host = value.slice(0, colon)
  const ip = value.slice(colon + 1)
  if (colon < 1 || /\s/.test(host) || (ip !== 'host-gateway' && isIP(ip) === 0))
    throw ContainerErrors.invalidSpec(`--add-host "${value}" is not host:ip`)
  return value
}

export function parseTmpfs(list: string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const item of list ?? []) {
    const [path, opts] = item.split(/:(.*)/s)
    if (!path?.startsWith('/')) throw ContainerErrors.invalidSpec(`tmpfs "${item}" must be an absolute container path`)
    out[path] = opts ?? ''
  }
  return out
}

/** docker run flags hostd understands in extraArgs, with whether each takes a value. */
const FLAGS: Record<string, { value: boolean; apply: (spec: NormalizedSpec, v: string) => void }> = {
  '--env': {
    value: true,
    apply: (s, v) => {
      // docker run -e NAME copies NAME from the client's environment; hostd has none to copy from.
      if (!/^[^=]+=/.test(v)) throw ContainerErrors.invalidSpec(`extraArgs: --env "${v}" must be NAME=value`)
      s.env.push(v)
    },
  },
  '--publish': { value: true, apply: (s, v) => s.ports.push(parsePort(v)) },
  '--volume': { value: true, apply: (s, v) => s.volumes.push(parseVolume(v)) },
  '--mount': { value: true, apply: (s, v) => s.mounts.push(parseMountFlag(v)) },
  '--device': { value: true, apply: (s, v) => s.devices.push(parseDevice(v)) },
  '--cap-add': { value: true, apply: (s, v) => s.capAdd.push(v) },
  '--cap-drop': { value: true, apply: (s, v) => s.capDrop.push(v) },
  '--dns': { value: true, apply: (s, v) => s.dns.push(v) },
  '--tmpfs': { value: true, apply: (s, v) => Object.assign(s.tmpfs, parseTmpfs([v])) },
  '--workdir': { value: true, apply: (s, v) => (s.workdir = v) },
  '--user': { value: true, apply: (s, v) => (s.user = v) },
  '--name': { value: true, apply: (s, v) => (s.name = v) },
  '--network': { value: true, apply: (s, v) => (s.network = v) },
  '--net': { value: true, apply: (s, v) => (s.network = v) },
  '--restart': { value: true, apply: (s, v) => (s.restartPolicy = v) },
  '--label': {
    value: true,
    apply: (s, v) => {
      const [k, val] = v.split(/=(.*)/s)
      if (!k) throw ContainerErrors.invalidSpec(`extraArgs: --label "${v}" has no name`)
      s.labels[k] = val ?? ''
    },
  },
  '--hostname': { value: true, apply: (s, v) => (s.hostname = v) },
  '--add-host': { value: true, apply: (s, v) => s.extraHosts.push(parseExtraHost(v)) },
  '--cpus': {
    value: true,
    apply: (s, v) => {
      if (!/^[0-9]+(\.[0-9]+)?$/.test(v))
        throw ContainerErrors.invalidSpec(`extraArgs: --cpus "${v}" is not a number such as 1.5`)
      s.cpus = Number(v)
    },
  },
  '--memory': { value: true, apply: (s, v) => (s.memory = parseSize(v)) },
  '--shm-size': { value: true, apply: (s, v) => (s.shmSize = parseSize(v)) },
  // docker run --entrypoint takes one word (the program), not a command line.
  '--entrypoint': { value: true, apply: (s, v) => (s.entrypoint = [v]) },
  '--pid': { value: true, apply: (s, v) => (s.pidMode = v) },
  '--ipc': { value: true, apply: (s, v) => (s.ipcMode = v) },
  '--uts': { value: true, apply: (s, v) => (s.utsMode = v) },
  '--userns': { value: true, apply: (s, v) => (s.usernsMode = v) },
  '--cgroupns': { value: true, apply: (s, v) => (s.cgroupnsMode = v) },
  '--security-opt': { value: true, apply: (s, v) => s.securityOpt.push(v) },
  '--privileged': { value: false, apply: (s, v) => (s.privileged = v !== 'false') },
  '--read-only': { value: false, apply: (s, v) => (s.readOnly = v !== 'false') },
  '--init': { value: false, apply: (s, v) => (s.init = v !== 'false') },
}
const SHORT: Record<string, string> = {
  '-e': '--env',
  '-p': '--publish',
  '-v': '--volume',
  '-w': '--workdir',
  '-u': '--user',
  '-m': '--memory',
  '-h': '--hostname',
  '-l': '--label',
}

/** Parses docker-run flags into the spec. Anything not on the allowlist is a 400 naming the flag. */
export function applyExtraArgs(spec: NormalizedSpec, args: string[]): void {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (!arg.startsWith('-'))
      throw ContainerErrors.invalidSpec(
        `extraArgs: "${arg}" is not a flag (give the image and command in their own fields)`,
      )
    let [flag, inline] = arg.startsWith('--')
      ? (arg.split(/=(.*)/s) as [string, string | undefined])
      : [arg.slice(0, 2), arg.length > 2 ? arg.slice(2).replace(/^=/, '') : undefined]
    flag = SHORT[flag] ?? flag
    const def = FLAGS[flag]
    if (!def) throw ContainerErrors.invalidSpec(`extraArgs: flag "${flag}" is not allowed`)
    let value = inline
    if (!def.value && value !== undefined && value !== 'true' && value !== 'false')
      throw ContainerErrors.invalidSpec(`extraArgs: flag "${flag}" is true or false, not "${value}"`)
    if (def.value && value === undefined) {
      value = args[++i]
      if (value === undefined) throw ContainerErrors.invalidSpec(`extraArgs: flag "${flag}" needs a value`)
    }
    def.apply(spec, value ?? 'true')
  }
}

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
