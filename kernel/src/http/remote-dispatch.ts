import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Readable } from 'node:stream'
import type { Role } from '@hostd/sdk'
import type { AuthUser } from '../auth/auth-user.ts'

/**
 * The kernel's `hostd.dispatch` service, for built-in plugins only (the fleet plugin): a request another member of a
 * fleet sent, already verified by that plugin (a signed assertion), is run through this daemon's own routing table
 * as the remote identity. So its own role rules, validation and audit log apply, exactly as for a local request.
 *
 * The identity rides on the injected request object under a module-private symbol, never on a header: no request
 * from the network can carry it. The auth hook reads it first (`remoteIdentityOf`). Routes that need a session
 * (sessionOnly, a recent sign-in) refuse a remote identity: it has no session here.
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

export interface RemoteDispatch {
  dispatch(request: DispatchRequest): Promise<DispatchResponse>
}

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

/** The remote user an injected request carries, or undefined (every request from the network). */
export function remoteIdentityOf(req: IncomingMessage): AuthUser | undefined {
  return (req as IncomingMessage & { [REMOTE_IDENTITY]?: AuthUser })[REMOTE_IDENTITY]
}

/** Builds the service over the daemon's request handler (the one the HTTPS server calls). */
export function createRemoteDispatch(handler: (req: IncomingMessage, res: ServerResponse) => void): RemoteDispatch {
  return {
    async dispatch(request) {
      const { default: inject } = await import('light-my-request')
      const user = remoteUser(request.identity)
      const headers: Record<string, string> = {}
      for (const name of FORWARDED_HEADERS) {
        const value = request.headers?.[name]
        if (value !== undefined) headers[name] = value
      }
      const res = await inject(
        (req, res) => {
          ;(req as IncomingMessage & { [REMOTE_IDENTITY]?: AuthUser })[REMOTE_IDENTITY] = user
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
