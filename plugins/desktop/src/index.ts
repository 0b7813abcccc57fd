/**
 * The desktop plugin: `GET /api/system/desktop` (is a VNC server sharing the host's screen on the configured target,
 * and how to connect) and `/api/desktop`, an admin WebSocket bridged to that one target (HOSTD_DESKTOP_VNC). The
 * target never comes from a request. README.md has the shapes, close codes and how to turn screen sharing on.
 */
import type { Socket } from 'node:net'
import { definePlugin, tokens, type AuditService, type RouteRequest, type SocketAdmission } from '@hostd/sdk'
import { configFromEnv, formatTarget, isLoopback, type DesktopConfig } from './config.ts'
import { connectVnc, probeVnc, VncUnreachable, type ProbeResult } from './adapters/rfb.ts'
import { bridge } from './bridge.ts'
import { DesktopErrors } from './errors.ts'
import { DesktopStatusSchema, type DesktopStatus } from './schemas.ts'

export const DESKTOP_SOCKET_PATH = '/api/desktop'
/** The bridge's connect to the VNC server, made before the upgrade completes. */
const CONNECT_TIMEOUT_MS = 2000
/** A connection opened for an upgrade that never reached the handler is dropped after this. */
const UNCLAIMED_MS = 10_000

type UpgradeRequest = SocketAdmission<unknown>['request']

/** What one load of the plugin shares. */
interface DesktopLoad {
  config: DesktopConfig
  /** The VNC connection each admitted upgrade opened, until its handler takes it. */
  connections: WeakMap<UpgradeRequest, Socket>
  /** Probes the target; concurrent status requests share one probe. */
  probe(): Promise<ProbeResult>
}

/** Reads the settings (a bad one throws, failing the load with its message). */
function newLoad(overrides: Partial<DesktopConfig>): DesktopLoad {
  const config = { ...configFromEnv(), ...overrides }
  let probing: Promise<ProbeResult> | null = null
  return {
    config,
    connections: new WeakMap(),
    probe: () => (probing ??= probeVnc(config.target).finally(() => (probing = null))),
  }
}

/** `GET /api/system/desktop`: whether the target answers as a VNC server, and how to connect. */
async function status(req: RouteRequest, { config, probe }: DesktopLoad): Promise<DesktopStatus> {
  const { target } = config
  const found = await probe()
  const ws = req.protocol === 'https' ? 'wss' : 'ws'
  let reason = found.reason
  if (!found.available)
    reason =
      `${reason}. Turn on screen sharing (x11vnc on the X display, or the desktop's own VNC server; ` +
      "see the desktop plugin's README) or point HOSTD_DESKTOP_VNC at it."
  else if (!reason && !found.display)
    reason = 'The VNC server asks for credentials: the display size is known once a viewer signs in.'
  return {
    available: found.available,
    target: formatTarget(target),
    protocolVersion: found.protocolVersion,
    authTypes: found.authTypes,
    authRequired: found.available && !found.authTypes.includes(1),
    display: found.display,
    name: found.name,
    websocketPath: DESKTOP_SOCKET_PATH,
    connectUrl: `${ws}://${req.host}${DESKTOP_SOCKET_PATH}`,
    nativeUrl: isLoopback(target.host) ? null : `vnc://${formatTarget(target)}`,
    reason,
  }
}

/** `overrides` replace settings read from the environment (tests). */
export function desktopPlugin(overrides: Partial<DesktopConfig> = {}) {
  return definePlugin({
    id: 'desktop',
    version: '1.0.0',
    kernel: '^1.1.0',
    description:
      "Remote desktop: the host's VNC screen sharing status, and an admin WebSocket bridge to its one configured VNC server.",
    ui: {
      pages: [
        {
          path: '/desktop',
          title: 'Desktop',
          icon: 'monitor',
          role: 'admin',
          module: 'ui/desktop.tsx',
          element: 'desktop-page',
        },
      ],
    },
    deps: { audit: tokens.audit, log: tokens.logger },
    setup: () => newLoad(overrides),
    routes: (r, _deps, load) => {
      r.get('/api/system/desktop', { role: 'admin', schema: { response: { 200: DesktopStatusSchema } } }, (req) =>
        status(req, load),
      )
    },
    sockets: (s, { audit, log }, { config, connections }) => {
      const record = (event: Parameters<AuditService['record']>[0], actor: Parameters<AuditService['record']>[1]) =>
        audit.record(event, actor).catch((err: unknown) => log.error({ err }, 'desktop audit write failed'))
      s.ws(
        DESKTOP_SOCKET_PATH,
        {
          role: 'admin',
          // A remote desktop is a person's: API tokens may not open it.
          sessionOnly: true,
          protocols: ['binary'],
          // Connect before the upgrade completes, so a host without screen sharing answers 503 with the reason.
          admit: async ({ user, request }) => {
            const target = formatTarget(config.target)
            let tcp: Socket
            try {
              tcp = await connectVnc(config.target, CONNECT_TIMEOUT_MS)
            } catch (err) {
              const reason = err instanceof VncUnreachable ? err.message : String(err)
              await record(
                { action: 'desktop.connect', target, result: 'failure', detail: { target, reason } },
                { user, ip: request.ip },
              )
              throw DesktopErrors.unavailable(
                `${reason}: screen sharing is off or HOSTD_DESKTOP_VNC is wrong (GET /api/system/desktop says more)`,
              )
            }
            tcp.pause()
            tcp.on('error', () => undefined) // until the bridge listens
            connections.set(request, tcp)
            const drop = () => {
              if (connections.get(request) !== tcp) return
              connections.delete(request)
              tcp.destroy()
            }
            request.raw.socket.once('close', drop)
            setTimeout(drop, UNCLAIMED_MS).unref()
          },
        },
        (socket, ctx) => {
          const tcp = connections.get(ctx.request)
          connections.delete(ctx.request)
          if (!tcp) return socket.close(1011, 'internal error: no VNC connection')
          const target = formatTarget(config.target)
          const actor = { user: ctx.user, ip: ctx.request.ip }
          const opened = record(
            { action: 'desktop.connect', target, detail: { target, protocol: socket.protocol || null } },
            actor,
          )
          bridge({
            socket,
            tcp,
            idleMs: config.idleSeconds * 1000,
            signal: ctx.signal,
            onEnd: (end) =>
              void opened.then(() =>
                record({ action: 'desktop.disconnect', target, detail: { target, ...end } }, actor),
              ),
          })
        },
      )
    },
  })
}

export default desktopPlugin()
