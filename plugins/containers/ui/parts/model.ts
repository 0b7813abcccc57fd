/**
 * What the containers pages read from the API (the plugin's own schemas, as types only: nothing of the server is
 * bundled), and small helpers every view shares: paths, state tones, port links.
 */
import type { Static } from '@hostd/sdk'
import type { Tone } from '@hostd/ui'
import type {
  Container,
  ContainerListSchema,
  EngineStatusSchema,
  ImageSchema,
  NetworkSchema,
  StatsEntry,
} from '../../src/schemas.ts'

export type { Container, StatsEntry }
export type EngineStatus = Static<typeof EngineStatusSchema>
export type ContainerList = Static<typeof ContainerListSchema>
export type ImageItem = Static<typeof ImageSchema>
export type NetworkItem = Static<typeof NetworkSchema>

/** Progress of one pull, as the install and update sockets pass on the engine's (no schema: the engine's words). */
export interface PullMessage {
  status: string
  id?: string
  progress?: string
  current?: number
  total?: number
}

/** The parts of the engine's inspect answer the detail view shows (the route returns it as is, without a schema). */
export interface Inspect {
  Id: string
  Name: string
  Created: string
  Path: string
  Args: string[]
  Image: string
  RestartCount: number
  State: {
    Status: string
    Running: boolean
    Paused: boolean
    ExitCode: number
    StartedAt: string
    FinishedAt: string
    Error: string
    Health?: { Status: string }
  }
  HostConfig: {
    RestartPolicy?: { Name: string; MaximumRetryCount: number }
    PortBindings?: Record<string, { HostIp: string; HostPort: string }[] | null> | null
    Binds?: string[] | null
    NanoCpus?: number
    Memory?: number
    NetworkMode?: string
    Privileged?: boolean
  }
  Config: {
    Image: string
    Cmd: string[] | null
    Entrypoint: string[] | null
    Env: string[] | null
    WorkingDir: string
    User: string
    Hostname: string
    Labels: Record<string, string> | null
    Tty?: boolean
  }
  Mounts: { Type: string; Name?: string; Source: string; Destination: string; RW: boolean }[]
  NetworkSettings: { Networks: Record<string, { IPAddress: string; Gateway: string; MacAddress: string }> | null }
}

/** Sub-paths of the page; a container with one of these names is linked by its id instead. */
export const VIEWS = ['images', 'networks', 'run', 'updates'] as const
const RESERVED = new Set<string>(VIEWS)

export function containerPath(base: string, c: { id: string; name: string }): string {
  return `${base}/${RESERVED.has(c.name) ? c.id : encodeURIComponent(c.name)}`
}

export function stateTone(state: string): Tone {
  if (state === 'running') return 'success'
  if (state === 'paused') return 'warning'
  if (state === 'restarting' || state === 'removing') return 'accent'
  if (state === 'dead') return 'danger'
  return 'neutral'
}

export function healthTone(health: string): Tone {
  return health === 'healthy' ? 'success' : health === 'unhealthy' ? 'danger' : 'accent'
}

const WILDCARD = new Set(['', '0.0.0.0', '::'])

/**
 * Where a published port answers for this browser: a wildcard or loopback binding on the host the dashboard was
 * opened with, a specific address on that address. Only TCP ports get a link (a UDP port is not a web page).
 */
export function portUrl(
  p: { hostAddress: string; hostPort: number; proto: string },
  pageHost = location.hostname,
): string | null {
  if (p.proto !== 'tcp' || !p.hostPort) return null
  const local = WILDCARD.has(p.hostAddress) || p.hostAddress.startsWith('127.') || p.hostAddress === '::1'
  const host = local ? pageHost : p.hostAddress
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${p.hostPort}/`
}

export function portText(p: { hostAddress: string; hostPort: number; containerPort: number; proto: string }): string {
  const address = WILDCARD.has(p.hostAddress) ? '' : `${p.hostAddress}:`
  // Port 0: a binding the engine fills with a free port when the container starts.
  return `${address}${p.hostPort || 'any'} → ${p.containerPort}${p.proto === 'tcp' ? '' : `/${p.proto}`}`
}

/** The same port bound on IPv4 and IPv6 wildcards shows once. */
export function uniquePorts<P extends { hostAddress: string; hostPort: number; containerPort: number; proto: string }>(
  ports: P[],
): P[] {
  const seen = new Set<string>()
  return ports.filter((p) => {
    const key = `${WILDCARD.has(p.hostAddress) ? '*' : p.hostAddress}|${p.hostPort}|${p.containerPort}|${p.proto}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

export const shortId = (id: string) => id.replace(/^sha256:/, '').slice(0, 12)
