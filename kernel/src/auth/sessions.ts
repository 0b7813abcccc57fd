import { hash, randomBytes } from 'node:crypto'
import type BetterSqlite3 from 'better-sqlite3'
import { isRole, type SessionUser } from '@hostd/sdk'
import { LIVE_ENDS, LiveConnections, type LiveEnd, type SessionHolder } from './live-connections.ts'

interface SessionRow {
  user_id: string
  created_at: number
  last_seen_at: number
  username: string
  role: string
  disabled: number
}

export interface SessionLifetimes {
  idleSeconds: number
  maxSeconds: number
}

/** Only write last-seen when it moved this much: keeps the authenticated hot path read-only. */
const TOUCH_EVERY_MS = 60_000
/** How many live sessions' token hashes are remembered (oldest forgotten first). */
const REMEMBERED_HASHES = 4096

export const hashToken = (token: string): string => hash('sha256', token, 'base64url')

/**
 * Server-side sessions. Tokens are 256 random bits; only their SHA-256 is stored. Every resolve joins the
 * users table, so a role change, a disable or a removal takes effect on live sessions at once.
 * Prepared statements on the ORM's own better-sqlite3 handle: this runs on every request (see ARCHITECTURE.md).
 * Ending a session here also ends its open sockets and streams (`connections`).
 */
export class SessionStore {
  /** The sockets and streams open on each session: ended with it (see live-connections.ts). */
  readonly connections: LiveConnections
  readonly #lifetimes: SessionLifetimes
  readonly #select: BetterSqlite3.Statement<[string], SessionRow>
  readonly #touch: BetterSqlite3.Statement<[number, string]>
  readonly #insert: BetterSqlite3.Statement<[string, string, number, number, string | null]>
  readonly #delete: BetterSqlite3.Statement<[string]>
  readonly #deleteForUser: BetterSqlite3.Statement<[string, string]>
  readonly #purge: BetterSqlite3.Statement<[number, number]>
  /**
   * Token -> its SHA-256, for tokens that resolved to a live session. Hashing is about 4 µs of the ~75 µs an
   * authenticated request costs in the daemon (measured); a Map hit is a fraction of that. Only the hash is
   * remembered, never the session: the row and its user are still read on every request.
   */
  readonly #hashes = new Map<string, string>()

  constructor(db: BetterSqlite3.Database, lifetimes: SessionLifetimes, onError?: (err: unknown) => void) {
    this.#lifetimes = lifetimes
    this.connections = new LiveConnections((tokenHash) => this.holder(tokenHash), onError)
    this.#select = db.prepare(
      `SELECT s.user_id, s.created_at, s.last_seen_at, u.username, u.role, u.disabled
         FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = ?`,
    )
    this.#touch = db.prepare('UPDATE sessions SET last_seen_at = ? WHERE token_hash = ?')
    this.#insert = db.prepare('INSERT INTO sessions (token_hash, user_id, created_at, last_seen_at, ip) VALUES (?, ?, ?, ?, ?)')
    this.#delete = db.prepare('DELETE FROM sessions WHERE token_hash = ?')
    this.#deleteForUser = db.prepare('DELETE FROM sessions WHERE user_id = ? AND token_hash != ?')
    this.#purge = db.prepare('DELETE FROM sessions WHERE created_at < ? OR last_seen_at < ?')
  }

  create(userId: string, ip: string | null): string {
    const now = Date.now()
    this.#purge.run(now - this.#lifetimes.maxSeconds * 1000, now - this.#lifetimes.idleSeconds * 1000)
    const token = randomBytes(32).toString('base64url')
    this.#insert.run(hashToken(token), userId, now, now, ip)
    return token
  }

  /** The live session's user, or null (unknown, expired, or the user is disabled or gone). */
  resolve(token: string): SessionUser | null {
    const remembered = this.#hashes.get(token)
    const tokenHash = remembered ?? hashToken(token)
    const row = this.#select.get(tokenHash)
    if (!row || row.disabled || !isRole(row.role)) return this.#forget(token)
    const now = Date.now()
    if (this.#expired(row, now)) {
      this.#delete.run(tokenHash)
      return this.#forget(token)
    }
    if (now - row.last_seen_at > TOUCH_EVERY_MS) this.#touch.run(now, tokenHash)
    // Remembered only once a token proved live, so made-up tokens cannot crowd out real ones.
    if (remembered === undefined) {
      if (this.#hashes.size >= REMEMBERED_HASHES) this.#hashes.delete(this.#hashes.keys().next().value!)
      this.#hashes.set(token, tokenHash)
    }
    return { id: row.user_id, username: row.username, role: row.role }
  }

  /**
   * Who holds the session with this token hash now, or null when it no longer counts (unknown, expired, user
   * disabled or removed). Read-only: an open socket re-checked by the live connections does not count as use.
   */
  holder(tokenHash: string): SessionHolder | null {
    const row = this.#select.get(tokenHash)
    if (!row || row.disabled || !isRole(row.role) || this.#expired(row, Date.now())) return null
    return { userId: row.user_id, role: row.role }
  }

  /** The token's hash (remembered for live tokens, so this is a map lookup on the request path). */
  hashOf(token: string): string {
    return this.#hashes.get(token) ?? hashToken(token)
  }

  /** Ends the session of this token (sign-out) and its open sockets and streams. */
  revoke(token: string, why: LiveEnd = LIVE_ENDS.signedOut): void {
    this.#forget(token)
    this.revokeHash(hashToken(token), why)
  }

  /** Ends the session with this token hash and its open sockets and streams. */
  revokeHash(tokenHash: string, why: LiveEnd = LIVE_ENDS.revoked): void {
    this.#delete.run(tokenHash)
    this.connections.endSession(tokenHash, why)
  }

  #expired(row: SessionRow, now: number): boolean {
    return now - row.created_at > this.#lifetimes.maxSeconds * 1000 || now - row.last_seen_at > this.#lifetimes.idleSeconds * 1000
  }

  #forget(token: string): null {
    this.#hashes.delete(token)
    return null
  }

  /** End every session of a user, except the one holding `keepToken` if given, and their open sockets and streams. */
  revokeUser(userId: string, keepToken?: string): void {
    const keep = keepToken ? hashToken(keepToken) : ''
    this.#deleteForUser.run(userId, keep)
    this.connections.endUser(userId, LIVE_ENDS.revoked, keep)
  }
}

const COOKIE = /(?:^|;\s*)svc_session=([A-Za-z0-9_-]+)/

/** The session token from `Authorization: Bearer` or the `svc_session` cookie, and which one carried it. */
export function extractToken(headers: { authorization?: string; cookie?: string }): { token: string; via: 'bearer' | 'cookie' } | null {
  const auth = headers.authorization
  if (auth && auth.length > 7 && auth.slice(0, 7).toLowerCase() === 'bearer ') return { token: auth.slice(7).trim(), via: 'bearer' }
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
