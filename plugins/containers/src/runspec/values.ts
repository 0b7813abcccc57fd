/**
 * The docker-run value syntaxes a RunSpec field or an extraArgs flag may carry (-p, -v, --device, --mount, --add-host,
 * --tmpfs, sizes), each read into its binding or refused with a 400 that names the value.
 */
import { isIP } from 'node:net'
import { ContainerErrors } from '../errors.ts'
import type { MountBinding, PortBinding, VolumeBinding } from '../runspec.ts'

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
export function parseDevice(value: string): { host: string; container: string; permissions: string } {
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

export function parseMountFlag(value: string): MountBinding {
  if (value.includes('"')) throw ContainerErrors.invalidSpec(`--mount "${value}": quoted fields are not supported`)
  const fields: Partial<Record<'type' | 'source' | 'target' | 'readonly', string>> = {}
  for (const part of value.split(',')) {
    const eq = part.indexOf('=')
    const given = eq < 0 ? part : part.slice(0, eq)
    const key = MOUNT_KEYS.get(given.toLowerCase())
    if (!key) {
      throw ContainerErrors.invalidSpec(
        `--mount "${value}": "${given}" is not supported (type, source, target, readonly); ` +
          'to mount a volume with driver options, create the volume first and mount it by name',
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
export function parseExtraHost(value: string): string {
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
