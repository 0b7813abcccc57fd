/**
 * The role rules for creating a container (interface document, "Role rules for POST /api/containers"), in one
 * place used by every creating path: the REST route, the install socket, the update socket and the catalog.
 *   1. operator by default;
 *   2. admin when the spec reaches the host: a host path in volumes, a named volume whose driver or options reach
 *      the host (checked on the volume as the engine has it), any mounts, devices, extraArgs, an escalating
 *      capability, a host namespace (network, pid, ipc, uts, userns, cgroupns; also the network of a container
 *      that uses the host's), privileged, security options;
 *   3. the host root mounted in any form (`/`, `//`, `/.`, `/etc/..`, a symlink resolving to `/`) refused for all;
 *   4. on Docker Desktop (whose "host" is its VM) sharing a host namespace is refused for all.
 */
import { realpath } from 'node:fs/promises'
import { posix } from 'node:path'
import { roleSatisfies, type Role } from '@hostd/sdk'
import { ContainerErrors } from './errors.ts'
import type { NormalizedSpec } from './runspec.ts'

/** Docker's default capability set: adding one of these changes nothing. */
const DEFAULT_CAPS = new Set([
  'CHOWN',
  'DAC_OVERRIDE',
  'FSETID',
  'FOWNER',
  'MKNOD',
  'NET_RAW',
  'SETGID',
  'SETUID',
  'SETFCAP',
  'SETPCAP',
  'NET_BIND_SERVICE',
  'SYS_CHROOT',
  'KILL',
  'AUDIT_WRITE',
])

export function capabilityName(cap: string): string {
  return cap.trim().toUpperCase().replace(/^CAP_/, '')
}

/** Where a path points on the host: lexically normalized, then with symlinks resolved (as far as it exists). */
export async function resolveHostPath(path: string): Promise<string> {
  const normal = posix.normalize(`/${path}`).replace(/\/+$/, '') || '/'
  // Resolve the longest existing prefix, so `/link-to-root/missing` still resolves through the link.
  let head = normal
  let tail = ''
  for (;;) {
    try {
      const real = await realpath(head)
      return posix.normalize(posix.join(real, tail)).replace(/\/+$/, '') || '/'
    } catch {
      if (head === '/') return normal
      tail = posix.join(posix.basename(head), tail)
      head = posix.dirname(head)
    }
  }
}

export interface PolicyVerdict {
  role: Role
  /** Why admin is needed, one line per reason (empty for operator). */
  reasons: string[]
}

/** A named volume as the engine has it (GET /volumes/{name}). */
export interface EngineVolume {
  name: string
  driver: string
  options: Record<string, string>
}

export interface EngineTraits {
  /** Docker Desktop: the engine's host is a VM, host namespaces are refused. */
  desktop: boolean
  /**
   * The spec's named volumes as the engine has them; null for one that does not exist (the engine creates it as
   * a plain local volume). Without this map named volumes are not judged yet.
   */
  volumes?: ReadonlyMap<string, EngineVolume | null>
  /**
   * For `network: container:<name>`: whether the container it joins (followed through its own `container:`
   * network, as the engine has it) uses the host's network namespace; undefined when not looked at yet.
   */
  networkPeerUsesHost?: boolean
}

/** Mount options that keep a tmpfs volume a tmpfs: its size, mode and owner. */
const TMPFS_OPTION = /^(size|mode|uid|gid|nr_inodes|nr_blocks)=[^,]*$/

/**
 * Why a named volume reaches the host, or null when it is plain: the local driver with no options (a folder in
 * the engine's data root), a `size` quota, or a tmpfs (`type=tmpfs` with size, mode and owner options only).
 * Anything else is the host's: another driver (a volume plugin mounts whatever it likes), a device or a bind
 * (`device=…`, `o=bind`), a network filesystem (nfs, cifs, `addr=`), any other option.
 */
export function volumeReachesHost(volume: EngineVolume): string | null {
  if (volume.driver !== 'local') return `volume ${volume.name} uses the ${volume.driver} driver`
  const options = Object.entries(volume.options ?? {})
  const tmpfs = volume.options?.type === 'tmpfs'
  const plain = options.every(
    ([key, value]) =>
      key === 'size' ||
      (tmpfs &&
        (key === 'type' || key === 'device' || (key === 'o' && value.split(',').every((o) => TMPFS_OPTION.test(o))))),
  )
  if (plain) return null
  return `volume ${volume.name} reaches the host (local driver with ${options.map(([k, v]) => `${k}=${v}`).join(', ')})`
}

/** The named volumes a spec mounts (volumes by name, volume mounts with a source). */
export function namedVolumeSources(spec: NormalizedSpec): string[] {
  const names = spec.volumes.filter((v) => !v.hostPath).map((v) => v.source)
  for (const m of spec.mounts) if (m.type === 'volume' && m.source) names.push(m.source)
  return [...new Set(names)]
}

const HOST_NS = (mode: string | undefined) => mode === 'host'

/**
 * Checks the spec: throws 403 HOSTD_CONTAINERS_HOST_ROOT_REFUSED for a host-root mount (every role), 403
 * HOSTD_CONTAINERS_HOST_NAMESPACE_REFUSED on a desktop engine, and returns the role the spec needs.
 */
export async function requiredRole(
  spec: NormalizedSpec,
  engine: EngineTraits = { desktop: false },
): Promise<PolicyVerdict> {
  const reasons: string[] = []
  const hostSources: string[] = []
  for (const v of spec.volumes) {
    if (v.hostPath) {
      reasons.push(`volume ${v.source} is a host path`)
      hostSources.push(v.source)
    } else {
      const known = engine.volumes?.get(v.source)
      const why = known ? volumeReachesHost(known) : null
      if (why) reasons.push(why)
    }
  }
  for (const m of spec.mounts) {
    reasons.push(`mount ${m.type} ${m.source || '(anonymous)'}:${m.target}`)
    if (m.type === 'bind' || m.source.startsWith('/')) hostSources.push(m.source)
  }
  for (const d of spec.devices) reasons.push(`device ${d.host}`)
  if (spec.hadExtraArgs) reasons.push('extraArgs')
  for (const cap of spec.capAdd) {
    const name = capabilityName(cap)
    if (!DEFAULT_CAPS.has(name)) reasons.push(`capability ${name}`)
  }
  const namespaces: [string, string | undefined][] = [
    ['network', spec.network],
    ['pid', spec.pidMode],
    ['ipc', spec.ipcMode],
    ['uts', spec.utsMode],
    ['userns', spec.usernsMode],
    ['cgroupns', spec.cgroupnsMode],
  ]
  const shared = namespaces.filter(([, mode]) => HOST_NS(mode)).map(([ns]) => ns)
  for (const ns of shared) reasons.push(`host ${ns} namespace`)
  if (engine.networkPeerUsesHost) {
    shared.push('network')
    reasons.push(`network ${spec.network} joins a container that uses the host network namespace`)
  }
  if (spec.privileged) reasons.push('privileged')
  if (spec.securityOpt.length > 0) reasons.push('security options')

  for (const source of hostSources) {
    if ((await resolveHostPath(source)) === '/')
      throw ContainerErrors.hostRoot(`Mounting the host root (${source}) is refused for every role`)
  }
  if (engine.desktop && shared.length > 0) {
    throw ContainerErrors.hostNamespace(
      `Sharing the host ${shared.join(', ')} namespace is refused on Docker Desktop for every role`,
    )
  }
  return { role: reasons.length > 0 ? 'admin' : 'operator', reasons }
}

/** The check every creating path calls: throws unless `role` may create this spec. */
export async function authorizeSpec(spec: NormalizedSpec, role: Role, engine?: EngineTraits): Promise<PolicyVerdict> {
  const verdict = await requiredRole(spec, engine)
  if (!roleSatisfies(role, verdict.role)) {
    throw ContainerErrors.needsAdmin(
      `This run spec reaches the host (${verdict.reasons.join('; ')}): it needs the admin role; you are ${role}`,
    )
  }
  return verdict
}
