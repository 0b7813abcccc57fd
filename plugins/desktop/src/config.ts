/** The desktop plugin's settings, from the environment, checked when the plugin loads. */
import { isIP } from 'node:net'

export interface VncTarget {
  host: string
  port: number
}

export interface DesktopConfig {
  /** HOSTD_DESKTOP_VNC: the one VNC server the bridge connects to (default 127.0.0.1:5900). Never from a request. */
  target: VncTarget
  /** HOSTD_DESKTOP_IDLE_SECONDS: a bridge with no bytes either way this long is closed; 0 never (default 3600). */
  idleSeconds: number
}

const HOSTNAME =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/

/** `host:port`, `[ipv6]:port`; the host an IPv4 address, an IPv6 address in brackets, or a host name. */
export function parseTarget(raw: string): VncTarget {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(raw.trim())
  const host = match?.[1] ?? match?.[2]
  const port = Number(match?.[3])
  const hostOk = host !== undefined && (match?.[1] ? isIP(host) === 6 : isIP(host) === 4 || HOSTNAME.test(host))
  if (!match || !hostOk || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`HOSTD_DESKTOP_VNC "${raw}" is not host:port (e.g. 127.0.0.1:5900, [::1]:5900, vnc.lan:5901)`)
  }
  return { host, port }
}

export function formatTarget({ host, port }: VncTarget): string {
  return `${isIP(host) === 6 ? `[${host}]` : host}:${port}`
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host)
}

export function configFromEnv(env: NodeJS.ProcessEnv = process.env): DesktopConfig {
  const idleRaw = env.HOSTD_DESKTOP_IDLE_SECONDS
  const idleSeconds = idleRaw === undefined || idleRaw.trim() === '' ? 3600 : Number(idleRaw)
  if (!Number.isSafeInteger(idleSeconds) || idleSeconds < 0 || idleSeconds > 7 * 24 * 3600) {
    throw new Error(`HOSTD_DESKTOP_IDLE_SECONDS must be an integer from 0 to ${7 * 24 * 3600} (got "${idleRaw}")`)
  }
  return { target: parseTarget(env.HOSTD_DESKTOP_VNC?.trim() || '127.0.0.1:5900'), idleSeconds }
}
