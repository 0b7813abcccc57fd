import { randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { duplexPair, type Duplex, type Readable } from 'node:stream'
import type { WebSocket } from 'ws'
import type { Role } from '@hostd/sdk'
import type { AuthUser } from '../auth/auth-user.ts'

// Not `import`: node:http's ES module facade loads Node's bundled undici (docs/ARCHITECTURE.md, "Runtime").
const { IncomingMessage: IncomingRequest } = process.getBuiltinModule('node:http')

/**
 * The kernel's `hostd.dispatch` service, for built-in plugins only (the fleet plugin): a request another member of a
 * fleet sent, already verified by that plugin (a signed assertion), is run through this daemon's own routing table
 * as the remote identity. So its own role rules, validation and audit log apply, exactly as for a local request.
 *
 * The identity rides on the injected request object under a module-private symbol, never on a header: no request
 * from the network can carry it. The auth hook reads it first (`remoteIdentityOf`). Routes that need a recent sign-in
 * refuse a remote identity (it has no session here); routes and sockets that refuse API tokens (sessionOnly) admit it
 * only when the origin host signed that its caller has a session there (`session`), as for a person signed in here.
 *
 * Sockets (`openSocket`): an upgrade injected on an in-memory stream pair into the daemon's own upgrade handling (the
 * socket hub: route, role, query, plugin state, the socket's own checks), the identity on the request object as
 * above; the other end of the pair is a WebSocket client the caller (the fleet plugin) relays. Nothing crosses the
 * network and no header carries who it is.
 */
export const DISPATCH_SERVICE_ID = 'hostd.dispatch'

const REMOTE_IDENTITY = Symbol('hostd.remoteIdentity')

export interface RemoteIdentity {
  /** The user's id on its own host. */
  userId: string
  username: string
  /** The role this host grants it (the fleet plugin applies this host's role map first). */
  role: Role
  /** The host the call came from. */
  origin: string
  /** The origin host signed that the caller has a session there (a person), not an API token: sessionOnly admits it. */
  session?: boolean
}

export interface DispatchRequest {
  method: string
  /** Path and query, e.g. `/api/containers?all=1`. */
  url: string
  /** Only these reach the route: content-type, accept. */
  headers?: Record<string, string>
  body?: Buffer
  identity: RemoteIdentity
  /** Aborting it ends the answer's body stream (the caller went away). */
  signal?: AbortSignal
}

export interface DispatchResponse {
  status: number
  headers: Record<string, string>
  /** The body as it comes (a server-sent event stream stays open until it ends or is destroyed: destroying it ends the
   * route's response). */
  body: Readable
}

export interface SocketRequest {
  /** Path and query, e.g. `/api/terminal?cols=80&rows=24`. */
  url: string
  /** The subprotocols offered (Sec-WebSocket-Protocol). */
  protocols?: string[]
  identity: RemoteIdentity
}

/** An opened socket (paused: resume it once listening), or the upgrade's refusal with the kernel's JSON error body. */
export type SocketAnswer =
  | { ok: true; socket: WebSocket; protocol: string }
  | { ok: false; status: number; body: string; contentType: string }

export interface RemoteDispatch {
  dispatch(request: DispatchRequest): Promise<DispatchResponse>
  openSocket(request: SocketRequest): Promise<SocketAnswer>
}

/** How long an injected upgrade may take to be answered. */
const UPGRADE_TIMEOUT_MS = 15_000
/** The largest frame an injected socket accepts from the daemon's side (as the socket hub's own limit). */
const SOCKET_MAX_PAYLOAD = 16 * 1024 * 1024

const FORWARDED_HEADERS = ['content-type', 'accept']

/** The user a remote identity stands for on this host: named `user@origin` in the audit log. */
export function remoteUser(identity: RemoteIdentity): AuthUser {
  return {
    id: `fleet:${identity.origin}:${identity.userId}`,
    username: `${identity.username}@${identity.origin}`,
    role: identity.role,
    twoFactor: false,
    mustEnroll: false,
  }
}

interface Carried {
  user: AuthUser
  session: boolean
}
type Carrying = IncomingMessage & { [REMOTE_IDENTITY]?: Carried }

const carry = (req: IncomingMessage, identity: RemoteIdentity) => {
  ;(req as Carrying)[REMOTE_IDENTITY] = { user: remoteUser(identity), session: identity.session === true }
}

/** The remote user an injected request carries, or undefined (every request from the network). */
export function remoteIdentityOf(req: IncomingMessage): AuthUser | undefined {
  return (req as Carrying)[REMOTE_IDENTITY]?.user
}

/** Whether an injected request's remote caller has a session on its origin host (signed by that host). */
export function remoteHasSession(req: IncomingMessage): boolean {
  return (req as Carrying)[REMOTE_IDENTITY]?.session === true
}

/**
 * Builds the service over the daemon's request handler (the one the HTTPS server calls) and its upgrade handling (the
 * server's `upgrade` event, which the socket hub serves).
 */
export function createRemoteDispatch(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void,
): RemoteDispatch {
  return {
    openSocket: (request) => openSocket(upgrade, request),
    async dispatch(request) {
      const { default: inject } = await import('light-my-request')
      const headers: Record<string, string> = {}
      for (const name of FORWARDED_HEADERS) {
        const value = request.headers?.[name]
        if (value !== undefined) headers[name] = value
      }
      const res = await inject(
        (req, res) => {
          carry(req, request.identity)
          handler(req, res)
        },
        {
          method: request.method as 'GET',
          url: request.url,
          headers,
          ...(request.body && request.body.length > 0 ? { payload: request.body } : {}),
          payloadAsStream: true,
          ...(request.signal ? { signal: request.signal } : {}),
        },
      )
      const out: Record<string, string> = {}
      for (const [name, value] of Object.entries(res.headers)) {
        if (value === undefined) continue
        out[name] = Array.isArray(value) ? value.join(', ') : String(value)
      }
      const body = res.stream()
      // The answer's reader went away (a streamed answer cancelled): end the response too, so a handler that writes
      // for ever (server-sent events) hears its `close` and stops.
      const served = res.raw.res
      body.once('close', () => {
        if (!served.writableFinished) served.destroy()
      })
      return { status: res.statusCode, headers: out, body }
    },
  }
}

/**
 * One injected upgrade: the request is made here (never parsed from bytes a client sent), carries the identity, and
 * goes to the daemon's upgrade handling over one end of a stream pair; the answer is read from the other end: 101,
 * then that end becomes a client WebSocket (masking its frames, as a browser does), else the refusal's status and body.
 */
async function openSocket(
  upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void,
  request: SocketRequest,
): Promise<SocketAnswer> {
  const { WebSocket } = await import('ws')
  const [near, far] = duplexPair()
  const req = new IncomingRequest(far as unknown as Socket)
  req.method = 'GET'
  req.url = request.url
  req.httpVersion = '1.1'
  req.httpVersionMajor = 1
  req.httpVersionMinor = 1
  req.headers = {
    host: 'hostd.fleet.invalid',
    connection: 'Upgrade',
    upgrade: 'websocket',
    'sec-websocket-version': '13',
    'sec-websocket-key': randomBytes(16).toString('base64'),
    ...(request.protocols?.length ? { 'sec-websocket-protocol': request.protocols.join(', ') } : {}),
  }
  req.push(null)
  carry(req, request.identity)
  return new Promise<SocketAnswer>((resolve) => {
    let head = Buffer.alloc(0)
    let settled = false
    const finish = (answer: SocketAnswer) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      near.off('data', onData)
      near.off('end', onEnd)
      if (!answer.ok) {
        near.destroy()
        far.destroy()
      }
      resolve(answer)
    }
    const refused = (status: number, message: string): SocketAnswer => ({
      ok: false,
      status,
      body: JSON.stringify({ error: 'HOSTD_INTERNAL', message }),
      contentType: 'application/json; charset=utf-8',
    })
    const timer = setTimeout(() => finish(refused(504, 'The socket was not answered in time')), UPGRADE_TIMEOUT_MS)
    const onEnd = () => finish(parseRefusal(head) ?? refused(502, 'The socket was closed before it was answered'))
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk])
      const end = head.indexOf('\r\n\r\n')
      if (end < 0) return
      const lines = head.subarray(0, end).toString('latin1').split('\r\n')
      const status = Number(lines[0]?.split(' ')[1])
      if (status !== 101) {
        const answer = parseRefusal(head)
        if (answer) finish(answer)
        return
      }
      const protocol = lines.find((l) => /^sec-websocket-protocol:/i.test(l))?.replace(/^[^:]*:\s*/, '') ?? ''
      near.pause()
      const ws = new WebSocket(null as unknown as string, undefined, {})
      // A client's end: ws makes a server-side socket from `null`; this end masks its frames like a browser's.
      ;(ws as unknown as { _isServer: boolean })._isServer = false
      ;(ws as unknown as { setSocket(s: Duplex, h: Buffer, o: object): void }).setSocket(near, head.subarray(end + 4), {
        maxPayload: SOCKET_MAX_PAYLOAD,
      })
      ws.pause()
      finish({ ok: true, socket: ws, protocol })
    }
    near.on('data', onData)
    near.once('end', onEnd)
    upgrade(req, far, Buffer.alloc(0))
  })
}

/** A refused upgrade's answer, once its head and its body (Content-Length) are all there. */
function parseRefusal(data: Buffer): SocketAnswer | null {
  const end = data.indexOf('\r\n\r\n')
  if (end < 0) return null
  const lines = data.subarray(0, end).toString('latin1').split('\r\n')
  const status = Number(lines[0]?.split(' ')[1]) || 502
  const header = (name: string) =>
    lines.find((l) => l.toLowerCase().startsWith(`${name}:`))?.replace(/^[^:]*:\s*/, '') ?? ''
  const length = Number(header('content-length'))
  const body = data.subarray(end + 4)
  if (Number.isInteger(length) && length > 0 && body.length < length) return null
  return { ok: false, status, body: body.toString('utf8'), contentType: header('content-type') }
}
