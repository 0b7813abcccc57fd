/**
 * Finds the container engine (DOCKER_HOST, else the usual Docker and Podman sockets), negotiates the API
 * version (the lower of the server's and ours) and hands out a dockerode client. Presence is re-probed: a
 * found engine is trusted for a while, an absent one is looked for again after a short pause, so the plugin
 * recovers when the engine comes back without a restart.
 */
import { access, constants } from 'node:fs/promises'
import type Docker from 'dockerode'
import type { EngineStatus } from '../api.ts'
import { ContainerErrors } from '../errors.ts'

// Not `import`: node:http's ES module facade loads Node's bundled undici (docs/ARCHITECTURE.md, "Runtime").
const { request: httpRequest } = process.getBuiltinModule('node:http')

/** The newest Engine API version this plugin was written against. */
export const SUPPORTED_API_VERSION = '1.45'
const ABSENT_CACHE_MS = 2_000
const PRESENT_CACHE_MS = 30_000
const PROBE_TIMEOUT_MS = 2_000

export interface EngineEndpoint {
  socketPath?: string
  host?: string
  port?: number
  /** What we tell people: `unix:///var/run/docker.sock`. */
  label: string
}

interface Found {
  docker: Docker
  endpoint: EngineEndpoint
  version: string
  apiVersion: string
  operatingSystem: string
  podman: boolean
}

/** min of two dotted versions ("1.41" vs "1.45" -> "1.41"). */
export function lowerVersion(a: string, b: string): string {
  const pa = a.split('.').map(Number)
  const pb = b.split('.').map(Number)
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i] ?? 0
    const y = pb[i] ?? 0
    if (x !== y) return x < y ? a : b
  }
  return a
}

/** DOCKER_HOST -> an endpoint; unix:// and tcp:// (plain HTTP) are supported. */
export function parseDockerHost(value: string): EngineEndpoint {
  if (value.startsWith('unix://')) return { socketPath: value.slice('unix://'.length), label: value }
  if (value.startsWith('tcp://')) {
    const url = new URL(`http://${value.slice('tcp://'.length)}`)
    return { host: url.hostname, port: Number(url.port || 2375), label: value }
  }
  throw ContainerErrors.engineUnavailable(`DOCKER_HOST=${value}: only unix:// and tcp:// are supported`)
}

/** The usual places an engine listens when DOCKER_HOST is not set: Docker, then Podman (rootful, rootless). */
export function defaultSockets(env: NodeJS.ProcessEnv = process.env, uid = process.getuid?.() ?? 0): string[] {
  const out = ['/var/run/docker.sock', '/run/docker.sock']
  if (env.XDG_RUNTIME_DIR) out.push(`${env.XDG_RUNTIME_DIR}/docker.sock`)
  out.push('/run/podman/podman.sock', `/run/user/${uid}/podman/podman.sock`)
  if (env.XDG_RUNTIME_DIR) out.push(`${env.XDG_RUNTIME_DIR}/podman/podman.sock`)
  return [...new Set(out)]
}

/** The engine's JSON answer to a GET; `T` names the fields the caller reads, each optional as engines differ. */
function getJson<T>(endpoint: EngineEndpoint, path: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        socketPath: endpoint.socketPath,
        host: endpoint.host,
        port: endpoint.port,
        path,
        method: 'GET',
        timeout: PROBE_TIMEOUT_MS,
      },
      (res) => {
        const chunks: Buffer[] = []
        let size = 0
        res.on('data', (c: Buffer) => {
          size += c.length
          if (size > 1024 * 1024) req.destroy(new Error('answer too large'))
          else chunks.push(c)
        })
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`${path} answered ${res.statusCode}`))
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')))
          } catch (err) {
            reject(err)
          }
        })
      },
    )
    req.on('timeout', () => req.destroy(new Error('no answer in time')))
    req.on('error', reject)
    req.end()
  })
}

async function binaryInstalled(): Promise<boolean> {
  for (const dir of (process.env.PATH ?? '/usr/bin:/usr/sbin:/usr/local/bin')
    .split(':')
    .concat(['/usr/sbin', '/usr/bin'])) {
    for (const name of ['dockerd', 'docker', 'podman']) {
      if (
        await access(`${dir}/${name}`, constants.X_OK).then(
          () => true,
          () => false,
        )
      )
        return true
    }
  }
  return false
}

export class Engine {
  readonly #dockerHost: string | null
  #found: Found | null = null
  #checkedAt = 0
  #message = ''
  #installed = false
  #probing: Promise<Found | null> | null = null

  constructor(dockerHost: string | null) {
    this.#dockerHost = dockerHost
  }

  /** The engine if one answers (cached), else null. Never throws. */
  async find(): Promise<Found | null> {
    const age = Date.now() - this.#checkedAt
    if (this.#found ? age < PRESENT_CACHE_MS : age < ABSENT_CACHE_MS) return this.#found
    this.#probing ??= this.#probe().finally(() => (this.#probing = null))
    return this.#probing
  }

  /** The engine's client, or a 503 that says what is missing. */
  async require(): Promise<Docker> {
    const found = await this.find()
    if (!found) throw ContainerErrors.engineUnavailable(this.#message)
    return found.docker
  }

  async info(): Promise<Found> {
    const found = await this.find()
    if (!found) throw ContainerErrors.engineUnavailable(this.#message)
    return found
  }

  /** Called when a request to the engine failed at the connection: look again next time. */
  lost(): void {
    this.#found = null
    this.#checkedAt = 0
  }

  async status(): Promise<EngineStatus> {
    const found = await this.find()
    return {
      available: Boolean(found),
      installed: Boolean(found) || this.#installed,
      version: found?.version ?? '',
      // No release feed is consulted: the latest engine version is not known here.
      latestVersion: '',
      message: found
        ? `${found.podman ? 'Podman' : 'Docker'} ${found.version} (API ${found.apiVersion}) at ${found.endpoint.label}`
        : this.#message,
    }
  }

  async #probe(): Promise<Found | null> {
    const endpoints: EngineEndpoint[] = this.#dockerHost
      ? [parseDockerHostSafe(this.#dockerHost)].filter((e): e is EngineEndpoint => e !== null)
      : defaultSockets().map((socketPath) => ({ socketPath, label: `unix://${socketPath}` }))
    const tried: string[] = []
    let found: Found | null = null
    for (const endpoint of endpoints) {
      if (
        endpoint.socketPath &&
        !(await access(endpoint.socketPath).then(
          () => true,
          () => false,
        ))
      ) {
        tried.push(`${endpoint.label} (no such socket)`)
        continue
      }
      try {
        const version = await getJson<EngineVersion>(endpoint, '/version')
        const apiVersion = lowerVersion(String(version.ApiVersion ?? '1.24'), SUPPORTED_API_VERSION)
        // dockerode (and its ssh and tar libraries: about 0.3 s of CPU to load) only once an engine answers.
        const { default: Dockerode } = await import('dockerode')
        const docker = new Dockerode({
          ...(endpoint.socketPath
            ? { socketPath: endpoint.socketPath }
            : { host: endpoint.host, port: endpoint.port, protocol: 'http' as const }),
          version: `v${apiVersion}`,
        })
        const components = version.Components ?? []
        const podman = components.some((c) => /podman/i.test(c.Name ?? ''))
        const info = await getJson<EngineInfo>(endpoint, `/v${apiVersion}/info`).catch((): EngineInfo => ({}))
        found = {
          docker,
          endpoint,
          version: String(version.Version ?? ''),
          apiVersion,
          operatingSystem: String(info.OperatingSystem ?? ''),
          podman,
        }
        break
      } catch (err) {
        tried.push(`${endpoint.label} (${(err as Error).message})`)
      }
    }
    this.#found = found
    this.#checkedAt = Date.now()
    if (!found) {
      this.#installed = await binaryInstalled()
      this.#message = this.#dockerHost
        ? `No container engine answers at DOCKER_HOST: ${tried.join('; ') || this.#dockerHost}`
        : `No container engine found: start Docker (or Podman's Docker-compatible socket) or set DOCKER_HOST. Tried ${tried.join('; ')}`
    }
    return found
  }
}

/** The fields of GET /version and GET /info read here. */
interface EngineVersion {
  Version?: string
  ApiVersion?: string
  Components?: { Name?: string }[]
}
interface EngineInfo {
  OperatingSystem?: string
}

function parseDockerHostSafe(value: string): EngineEndpoint | null {
  try {
    return parseDockerHost(value)
  } catch {
    return null
  }
}
