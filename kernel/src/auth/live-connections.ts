import { roleSatisfies, type Role } from '@hostd/sdk'

/** How a live connection is ended: the WebSocket close code and reason (an HTTP stream just ends). */
export interface LiveEnd {
  /** 4401: the session is over (signed out, revoked, expired, user disabled or removed). 4403: the role is too low now. */
  code: 4401 | 4403
  reason: string
}

export const LIVE_ENDS = {
  signedOut: { code: 4401, reason: 'session ended: signed out' },
  revoked: { code: 4401, reason: 'session ended' },
  /** Found by a re-check: expired, deleted, or its user disabled or removed. */
  gone: { code: 4401, reason: 'session ended or expired, or the user is disabled or removed' },
  roleTooLow: (role: Role): LiveEnd => ({ code: 4403, reason: `role too low: this needs ${role}` }),
  /** The admin's policy now requires two-factor of this user, who has not enrolled yet. */
  enrollmentRequired: { code: 4403, reason: 'two-factor enrollment required' },
  /** The API token was revoked, expired, or its owner disabled or removed. */
  tokenRevoked: { code: 4401, reason: 'API token revoked or expired' },
} as const satisfies Record<string, LiveEnd | ((role: Role) => LiveEnd)>

/** A session's or API token's holder as the store has it right now; null when it no longer counts. */
export interface SessionHolder {
  userId: string
  /** The role it has now (for a token: the lower of its own and its owner's). */
  role: Role
  /** The two-factor policy now covers its user, who has not enrolled. */
  mustEnroll: boolean
}

/** What a connection signed in with: a session (a person) or an API token (a script). */
export type CredentialKind = 'session' | 'token'

/** One open WebSocket or HTTP request riding on a session or an API token. */
export interface LiveConnection {
  /** SHA-256 of the session token or API token, as the sessions or api_tokens table keys it. */
  readonly sessionHash: string
  readonly kind: CredentialKind
  readonly userId: string
  /** The least role its endpoint needs. */
  readonly role: Role
  /** Close it now (called at most once, after it left the registry). */
  end(why: LiveEnd): void
}

/** How often open connections are checked against the store (catches expiry and changes made behind the kernel). */
export const RECHECK_EVERY_MS = 250

/**
 * Every open WebSocket and in-flight plugin HTTP request (streams included), tied to the session and user that
 * opened it and the role its endpoint needs. The kernel's own session changes end the matching connections at once
 * (`endSession`, `endUser`, `recheck`); a timer re-checks every connection's session and role against the store
 * every RECHECK_EVERY_MS while any is open, which catches expiry and rows changed behind the kernel's back.
 *
 * Cost: a signed-in plugin request is one Set add and delete (the kernel's own routes skip it). The timer runs only
 * while something is open, and one re-check reads each distinct session once.
 */
export class LiveConnections {
  readonly #open = new Set<LiveConnection>()
  readonly #check: (sessionHash: string, kind: CredentialKind) => SessionHolder | null
  readonly #onError: (err: unknown) => void
  #timer: NodeJS.Timeout | null = null

  constructor(
    check: (sessionHash: string, kind: CredentialKind) => SessionHolder | null,
    onError: (err: unknown) => void = () => undefined,
  ) {
    this.#check = check
    this.#onError = onError
  }

  get size(): number {
    return this.#open.size
  }

  add(connection: LiveConnection): void {
    this.#open.add(connection)
    if (this.#timer === null) {
      this.#timer = setInterval(() => this.#tick(), RECHECK_EVERY_MS)
      this.#timer.unref()
    }
  }

  /** Forget a connection that closed by itself. */
  delete(connection: LiveConnection): void {
    this.#open.delete(connection)
  }

  /** Ends every connection of one session; answers how many. */
  endSession(sessionHash: string, why: LiveEnd = LIVE_ENDS.revoked): number {
    return this.#endWhere((c) => c.sessionHash === sessionHash, why)
  }

  /** Ends every connection a user opened with a session (or with an API token), except those of `exceptHash`; answers how many. */
  endUser(userId: string, kind: CredentialKind, why: LiveEnd = LIVE_ENDS.revoked, exceptHash?: string): number {
    return this.#endWhere((c) => c.userId === userId && c.kind === kind && c.sessionHash !== exceptHash, why)
  }

  /**
   * Checks open connections (all, or one user's) against the store now: a session or token that is gone, expired or
   * whose user is disabled or removed ends its connections with 4401; a role below an endpoint's, or a user the
   * two-factor policy now sends to enrollment, with 4403.
   */
  recheck(userId?: string): number {
    const holders = new Map<string, SessionHolder | null>()
    let ended = 0
    for (const connection of this.#open) {
      if (userId !== undefined && connection.userId !== userId) continue
      let holder = holders.get(connection.sessionHash)
      if (holder === undefined) {
        holder = this.#check(connection.sessionHash, connection.kind)
        holders.set(connection.sessionHash, holder)
      }
      if (!holder || holder.userId !== connection.userId)
        this.#end(connection, connection.kind === 'token' ? LIVE_ENDS.tokenRevoked : LIVE_ENDS.gone)
      else if (holder.mustEnroll) this.#end(connection, LIVE_ENDS.enrollmentRequired)
      else if (!roleSatisfies(holder.role, connection.role))
        this.#end(connection, LIVE_ENDS.roleTooLow(connection.role))
      else continue
      ended++
    }
    return ended
  }

  /** Stops the timer (daemon shutdown; the plugins' retirement closes what is open). */
  close(): void {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
  }

  #tick(): void {
    if (this.#open.size === 0) {
      this.close()
      return
    }
    try {
      this.recheck()
    } catch (err) {
      this.#onError(err)
    }
  }

  #endWhere(match: (c: LiveConnection) => boolean, why: LiveEnd): number {
    let ended = 0
    for (const connection of this.#open) {
      if (!match(connection)) continue
      this.#end(connection, why)
      ended++
    }
    return ended
  }

  #end(connection: LiveConnection, why: LiveEnd): void {
    this.#open.delete(connection)
    try {
      connection.end(why)
    } catch (err) {
      this.#onError(err)
    }
  }
}
