import type { ServerResponse } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { errors, type HostdError, type Role } from '@hostd/sdk'
import type { CredentialKind, LiveConnection, LiveEnd } from '../auth/live-connections.ts'
import type { SessionStore } from '../auth/sessions.ts'

/** How long an ended response may take to flush to a slow reader before its connection is cut. */
const FLUSH_GRACE_MS = 500

/** The error a connection's signal is aborted with when its session ends (401) or its role drops (403). */
export function liveEndError(why: LiveEnd): HostdError {
  return why.code === 4403 ? errors.forbidden(why.reason) : errors.unauthorized(why.reason)
}

/**
 * A plugin request in flight, tied to its session. When the session ends, the request's `lifetime` signal aborts
 * (a stream that listens ends itself), then whatever response is still open is cut: streams, downloads, long polls.
 */
export class LiveRequest implements LiveConnection {
  readonly sessionHash: string
  readonly kind: CredentialKind
  readonly userId: string
  readonly role: Role
  readonly #res: ServerResponse
  /** Made on the first read of `lifetime` only: ordinary requests never pay for an AbortController. */
  #controller: AbortController | null = null
  #signal: AbortSignal | null = null
  #ended: LiveEnd | null = null

  constructor(credential: RequestCredential, userId: string, role: Role, res: ServerResponse) {
    this.sessionHash = credential.hash
    this.kind = credential.kind
    this.userId = userId
    this.role = role
    this.#res = res
  }

  /** The request's lifetime: its plugin version's, ended early by the session's end. */
  lifetime(pluginLifetime: AbortSignal): AbortSignal {
    if (this.#signal === null) {
      this.#controller = new AbortController()
      if (this.#ended) this.#controller.abort(liveEndError(this.#ended))
      this.#signal = AbortSignal.any([pluginLifetime, this.#controller.signal])
    }
    return this.#signal
  }

  end(why: LiveEnd): void {
    this.#ended = why
    this.#controller?.abort(liveEndError(why))
    const res = this.#res
    if (!res.writableEnded) res.destroy()
    else if (!res.writableFinished) setTimeout(() => res.writableFinished || res.destroy(), FLUSH_GRACE_MS).unref()
  }
}

export interface RequestCredential {
  /** The session's or API token's hash, as its table keys it. */
  hash: string
  kind: CredentialKind
}

/** What a signed-in request signed in with: its session, or its API token. */
export function credentialOf(sessions: SessionStore, req: FastifyRequest): RequestCredential | null {
  if (req.apiToken !== null) return { hash: req.apiToken.hash, kind: 'token' }
  return req.sessionToken === null ? null : { hash: sessions.hashOf(req.sessionToken), kind: 'session' }
}

/** Registers a signed-in plugin request with the live connections of its session or API token until its response closes. */
export function trackRequest(sessions: SessionStore, req: FastifyRequest, reply: FastifyReply, role: Role): void {
  const res = reply.raw
  const credential = credentialOf(sessions, req)
  if (res.destroyed || credential === null || req.user === null) return
  const live = new LiveRequest(credential, req.user.id, role, res)
  req.liveRequest = live
  sessions.connections.add(live)
  res.once('close', () => sessions.connections.delete(live))
}
