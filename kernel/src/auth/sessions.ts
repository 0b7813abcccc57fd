import { randomBytes } from 'node:crypto'
import type BetterSqlite3 from 'better-sqlite3'
import { isRole } from '@hostd/sdk'
import { LIVE_ENDS, LiveConnections, type LiveEnd, type SessionHolder } from './live-connections.ts'
import { ApiTokenStore } from './api-tokens.ts'
import type { TwoFactorPolicy } from './policy.ts'
import { hashToken, RememberedTokens } from './token-hashes.ts'
import type { WriteCounter } from '../db/write-counter.ts'
import { runUnlessFull } from '../db/storage.ts'
import type { AuthUser } from './auth-user.ts'

export { hashToken } from './token-hashes.ts'

interface SessionRow {
  user_id: string
  created_at: number
  last_seen_at: number
  username: string
  role: string
  disabled: number
  two_factor: number
}

interface ListedRow {
  id: string
  token_hash: string
  created_at: number
  last_seen_at: number
  ip: string | null
  user_agent: string | null
}

/** A live session as its user (or an admin) sees it: never the token or its hash. */
export interface SessionInfo {
  id: string
  createdAt: string
  lastSeenAt: string
  ip: string | null
  userAgent: string | null
  /** The session this request came with. */
  current: boolean
}

export interface SessionLifetimes {
  idleSeconds: number
  maxSeconds: number
  /** How long after the password was last given a session may change account security ("sudo mode"). */
  reauthSeconds: number
}

/** What ending a user's access ended: counts for the audit record. */
export interface EndedAccess {
  sessions: number
  tokens: number
}

/** Only write last-seen when it moved this much: keeps the authenticated hot path read-only. */
const TOUCH_EVERY_MS = 60_000
/** Longer user agents are cut: they are shown, never parsed. */
const USER_AGENT_MAX = 512

/**
 * Server-side sessions. Tokens are 256 random bits; only their SHA-256 is stored. Every resolve joins the
 * users table, so a role change, a disable, a removal or two-factor state takes effect on live sessions at once.
 * Prepared statements on the ORM's own better-sqlite3 handle: this runs on every request (see ARCHITECTURE.md).
 * Ending a session here also ends its open sockets and streams (`connections`), which API tokens share.
 */
export class SessionStore {
  /** The sockets and streams open on each session or API token: ended with it (see live-connections.ts). */
  readonly connections: LiveConnections
  /** API tokens for scripts, told from session tokens by their prefix. */
  readonly apiTokens: ApiTokenStore
  readonly #lifetimes: SessionLifetimes
  readonly #policy: TwoFactorPolicy
  readonly #select: BetterSqlite3.Statement<[string], SessionRow>
  readonly #touch: BetterSqlite3.Statement<[number, string]>
  readonly #insert: BetterSqlite3.Statement<
    [string, string, string, number, number, number, string | null, string | null]
  >
  readonly #delete: BetterSqlite3.Statement<[string]>
  readonly #deleteForUser: BetterSqlite3.Statement<[string, string]>
  readonly #purge: BetterSqlite3.Statement<[number, number]>
  readonly #list: BetterSqlite3.Statement<[string], ListedRow>
  readonly #byId: BetterSqlite3.Statement<[string, string], { token_hash: string }>
  readonly #authOf: BetterSqlite3.Statement<[string], { id: string; created_at: number; auth_at: number | null }>
  readonly #reauth: BetterSqlite3.Statement<[number, string]>
  readonly #tokens: RememberedTokens<SessionRow>

  constructor(
    db: BetterSqlite3.Database,
    writes: WriteCounter,
    lifetimes: SessionLifetimes,
    policy: TwoFactorPolicy,
    onError?: (err: unknown) => void,
  ) {
    this.#tokens = new RememberedTokens(writes)
    this.#lifetimes = lifetimes
    this.#policy = policy
    this.connections = new LiveConnections(
      (hash, kind) => (kind === 'token' ? this.apiTokens.holder(hash) : this.holder(hash)),
      onError,
    )
    this.apiTokens = new ApiTokenStore(db, writes, this.connections, policy)
    // Sessions made before sessions had public ids get one.
    db.prepare('UPDATE sessions SET id = lower(hex(randomblob(16))) WHERE id IS NULL').run()
    this.#select = db.prepare(
      `SELECT s.user_id, s.created_at, s.last_seen_at, u.username, u.role, u.disabled, u.two_factor
         FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = ?`,
    )
    this.#touch = db.prepare('UPDATE sessions SET last_seen_at = ? WHERE token_hash = ?')
    this.#insert = db.prepare(
      'INSERT INTO sessions (token_hash, id, user_id, created_at, last_seen_at, auth_at, ip, user_agent) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    )
    this.#delete = db.prepare('DELETE FROM sessions WHERE token_hash = ?')
    this.#deleteForUser = db.prepare('DELETE FROM sessions WHERE user_id = ? AND token_hash != ?')
    this.#purge = db.prepare('DELETE FROM sessions WHERE created_at < ? OR last_seen_at < ?')
    this.#list = db.prepare(
      'SELECT id, token_hash, created_at, last_seen_at, ip, user_agent FROM sessions WHERE user_id = ? ORDER BY last_seen_at DESC, created_at DESC',
    )
    this.#byId = db.prepare('SELECT token_hash FROM sessions WHERE user_id = ? AND id = ?')
    this.#authOf = db.prepare('SELECT id, created_at, auth_at FROM sessions WHERE token_hash = ?')
    this.#reauth = db.prepare('UPDATE sessions SET auth_at = ? WHERE token_hash = ?')
  }

  /** A new session of the user; the client's address and user agent are kept to show in their list of sessions. */
  create(userId: string, ip: string | null, userAgent?: string | null): string {
    const now = Date.now()
    this.#purge.run(now - this.#lifetimes.maxSeconds * 1000, now - this.#lifetimes.idleSeconds * 1000)
    const token = randomBytes(32).toString('base64url')
    this.#insert.run(
      hashToken(token),
      randomBytes(16).toString('hex'),
      userId,
      now,
      now,
      now,
      ip,
      userAgent ? userAgent.slice(0, USER_AGENT_MAX) : null,
    )
    return token
  }

  /** The session's public id (what its list shows, and what an API token minted from it remembers), or null. */
  idOf(token: string): string | null {
    return this.#authOf.get(this.hashOf(token))?.id ?? null
  }

  /**
   * Whether the session's password was given within the re-authentication window ("sudo mode", GitHub's name): at
   * sign-in, or later through `reauthenticated`. Changes to account security ask for it, so a stolen cookie alone
   * cannot mint a token, create an admin or turn two-factor off.
   */
  recentlyAuthenticated(token: string): boolean {
    const row = this.#authOf.get(this.hashOf(token))
    return row !== undefined && Date.now() - (row.auth_at ?? row.created_at) <= this.#lifetimes.reauthSeconds * 1000
  }

  /** The session's user has just given their password again. */
  reauthenticated(token: string): void {
    this.#reauth.run(Date.now(), this.hashOf(token))
  }

  /** The live session's user, or null (unknown, expired, or the user is disabled or gone). */
  resolve(token: string): AuthUser | null {
    const read = this.#tokens.read(token, (tokenHash) => this.#select.get(tokenHash))
    const { hash: tokenHash, row } = read
    if (!row || row.disabled || !isRole(row.role)) return this.#tokens.forget(token)
    const now = Date.now()
    if (this.#expired(row, now)) {
      this.#delete.run(tokenHash)
      return this.#tokens.forget(token)
    }
    if (now - row.last_seen_at > TOUCH_EVERY_MS) runUnlessFull(this.#touch, now, tokenHash)
    this.#tokens.remember(token, read)
    return {
      id: row.user_id,
      username: row.username,
      role: row.role,
      twoFactor: row.two_factor === 1,
      mustEnroll: this.#policy.mustEnroll(row.role, row.two_factor),
    }
  }

  /**
   * Who holds the session with this token hash now, or null when it no longer counts (unknown, expired, user
   * disabled or removed). Read-only: an open socket re-checked by the live connections does not count as use.
   */
  holder(tokenHash: string): SessionHolder | null {
    const row = this.#select.get(tokenHash)
    if (!row || row.disabled || !isRole(row.role) || this.#expired(row, Date.now())) return null
    return { userId: row.user_id, role: row.role, mustEnroll: this.#policy.mustEnroll(row.role, row.two_factor) }
  }

  /** The token's hash (remembered for live tokens, so this is a map lookup on the request path). */
  hashOf(token: string): string {
    return this.#tokens.hashOf(token)
  }

  /** A user's live sessions, most recently used first; `currentToken`'s is marked. */
  list(userId: string, currentToken: string | null = null): SessionInfo[] {
    const now = Date.now()
    const current = currentToken === null ? null : this.hashOf(currentToken)
    return this.#list
      .all(userId)
      .filter((r) => !this.#expired(r, now))
      .map((r) => ({
        id: r.id,
        createdAt: new Date(r.created_at).toISOString(),
        lastSeenAt: new Date(r.last_seen_at).toISOString(),
        ip: r.ip,
        userAgent: r.user_agent,
        current: r.token_hash === current,
      }))
  }

  /** Ends one session of a user by its public id, and its open sockets and streams; false when they have none by that id. */
  revokeById(userId: string, id: string): boolean {
    const row = this.#byId.get(userId, id)
    if (!row) return false
    this.revokeHash(row.token_hash)
    return true
  }

  /** Ends the session of this token (sign-out) and its open sockets and streams. */
  revoke(token: string, why: LiveEnd = LIVE_ENDS.signedOut): void {
    this.#tokens.forget(token)
    this.revokeHash(hashToken(token), why)
  }

  /** Ends the session with this token hash and its open sockets and streams. */
  revokeHash(tokenHash: string, why: LiveEnd = LIVE_ENDS.revoked): void {
    this.#delete.run(tokenHash)
    this.connections.endSession(tokenHash, why)
  }

  #expired(row: { created_at: number; last_seen_at: number }, now: number): boolean {
    return (
      now - row.created_at > this.#lifetimes.maxSeconds * 1000 ||
      now - row.last_seen_at > this.#lifetimes.idleSeconds * 1000
    )
  }

  /**
   * End every session of a user, except the one holding `keepToken` if given, and what they have open. Their API
   * tokens stay: "end my other sessions" signs browsers out, it does not break scripts. `revokeAccess` ends both.
   */
  revokeUser(userId: string, keepToken?: string | null): number {
    const keep = keepToken ? hashToken(keepToken) : ''
    const ended = this.#deleteForUser.run(userId, keep).changes
    this.connections.endUser(userId, 'session', LIVE_ENDS.revoked, keep)
    return ended
  }

  /**
   * After a change to how a user proves who they are (password, two-factor) or to whether they may sign in at all
   * (disabled, removed): every session of theirs ends, and every API token, except the session holding `keepToken`
   * (the one making the change) and the tokens minted from it. So a thief's session, and the tokens it minted, do not
   * outlive the change that was meant to lock them out; a token minted from a session that ended is gone too.
   */
  revokeAccess(userId: string, keepToken?: string | null): EndedAccess {
    const keepSession = keepToken ? this.idOf(keepToken) : null
    return { sessions: this.revokeUser(userId, keepToken), tokens: this.apiTokens.revokeAllOf(userId, keepSession) }
  }
}

const COOKIE = /(?:^|;\s*)svc_session=([A-Za-z0-9_-]+)/

/** The session token from `Authorization: Bearer` or the `svc_session` cookie, and which one carried it. */
export function extractToken(headers: {
  authorization?: string
  cookie?: string
}): { token: string; via: 'bearer' | 'cookie' } | null {
  const auth = headers.authorization
  if (auth && auth.length > 7 && auth.slice(0, 7).toLowerCase() === 'bearer ')
    return { token: auth.slice(7).trim(), via: 'bearer' }
  const cookie = headers.cookie
  if (cookie) {
    const match = COOKIE.exec(cookie)
    if (match) return { token: match[1]!, via: 'cookie' }
  }
  return null
}

export function sessionCookie(token: string, maxAgeSeconds: number, secure: boolean): string {
  return `svc_session=${token}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`
}

export const clearedSessionCookie = (secure: boolean): string =>
  `svc_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${secure ? '; Secure' : ''}`
