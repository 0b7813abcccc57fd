import { randomBytes, randomUUID } from 'node:crypto'
import type BetterSqlite3 from 'better-sqlite3'
import { defineError, isRole, roleSatisfies, ROLES, type ApiTokenRef, type Role } from '@hostd/sdk'
import { LIVE_ENDS, type LiveConnections, type SessionHolder } from './live-connections.ts'
import type { TwoFactorPolicy } from './policy.ts'
import { hashToken, RememberedTokens } from './token-hashes.ts'
import type { WriteCounter } from '../db/write-counter.ts'
import { runUnlessFull } from '../db/storage.ts'
import type { AuthUser } from './auth-user.ts'

/** Every API token starts with this, so people and secret scanners recognise one, and the auth hook tells it from a session token without a lookup. */
export const API_TOKEN_PREFIX = 'hostd_pat_'
/** Only write last-used when it moved this much (as sessions do). */
const TOUCH_EVERY_MS = 60_000
export const MAX_TOKENS_PER_USER = 100

export const TokenErrors = {
  notFound: defineError('HOSTD_TOKENS_NOT_FOUND', 404, 'No such API token'),
  nameTaken: defineError('HOSTD_TOKENS_NAME_TAKEN', 409, 'You already have an API token with that name'),
  tooMany: defineError('HOSTD_TOKENS_TOO_MANY', 409, `You have ${MAX_TOKENS_PER_USER} API tokens: revoke one first`),
  roleTooHigh: defineError('HOSTD_TOKENS_ROLE_TOO_HIGH', 400, "A token's role cannot be above your own"),
  badExpiry: defineError('HOSTD_TOKENS_BAD_EXPIRY', 400, 'The expiry must be in the future'),
} as const

interface TokenRow {
  id: string
  user_id: string
  name: string
  role: string
  prefixes: string | null
  expires_at: number | null
  last_used_at: number | null
  username: string
  user_role: string
  disabled: number
  two_factor: number
}

interface ListedRow {
  id: string
  name: string
  role: string
  prefixes: string | null
  created_at: number
  last_used_at: number | null
  expires_at: number | null
}

/** What a request signed in with an API token knows about it. */
export interface ResolvedApiToken extends ApiTokenRef {
  hash: string
  /** Path prefixes it may call, or null for any. */
  prefixes: readonly string[] | null
}

/** An API token as its owner and admins see it (never its secret). */
export interface ApiTokenInfo {
  id: string
  name: string
  role: Role
  prefixes: string[] | null
  createdAt: string
  lastUsedAt: string | null
  expiresAt: string | null
}

export interface NewApiToken {
  name: string
  role: Role
  /** Epoch milliseconds, or null for a token that does not expire. */
  expiresAt: number | null
  prefixes: string[] | null
}

const lowerRole = (a: Role, b: Role): Role => ROLES[Math.min(ROLES.indexOf(a), ROLES.indexOf(b))]!
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

/**
 * Whether a token limited to `prefixes` may call `url`: its path must lie at or under one of them, segment-wise
 * (`/api/containers` covers `/api/containers/abc`, not `/api/containersx`). A path with dot segments or an encoded
 * slash, backslash or dot is refused outright, so the path checked is the path routed.
 */
export function pathAllowed(prefixes: readonly string[] | null, url: string): boolean {
  if (prefixes === null) return true
  const q = url.indexOf('?')
  const path = q === -1 ? url : url.slice(0, q)
  if (/%2e|%2f|%5c|\\|\/\.\.?(?:\/|$)/i.test(path)) return false
  return prefixes.some(
    (p) => path === p || path.startsWith(p.endsWith('/') ? p : `${p}/`) || (p.endsWith('/') && path === p.slice(0, -1)),
  )
}

/**
 * API tokens for scripts. The secret (`hostd_pat_` + 256 random bits) is shown once; only its SHA-256 is stored. A
 * request with one gets the lower of the token's role and its owner's current role, read on every request with the
 * owner's row (a demoted, disabled or removed owner lowers or ends the token at once), and only on the token's path
 * prefixes. Prepared statements on the native handle, like the session store.
 */
export class ApiTokenStore {
  readonly #connections: LiveConnections
  readonly #policy: TwoFactorPolicy
  readonly #tokens: RememberedTokens<TokenRow>
  readonly #select: BetterSqlite3.Statement<[string], TokenRow>
  readonly #touch: BetterSqlite3.Statement<[number, string]>
  readonly #insert: BetterSqlite3.Statement<
    [string, string, string, string, string, string | null, number, number | null, string | null]
  >
  readonly #list: BetterSqlite3.Statement<[string], ListedRow>
  readonly #count: BetterSqlite3.Statement<[string], { n: number }>
  readonly #named: BetterSqlite3.Statement<[string, string], { id: string }>
  readonly #byId: BetterSqlite3.Statement<[string, string], { token_hash: string; name: string }>
  readonly #delete: BetterSqlite3.Statement<[string]>
  readonly #othersOf: BetterSqlite3.Statement<[string, string], { token_hash: string }>

  constructor(db: BetterSqlite3.Database, writes: WriteCounter, connections: LiveConnections, policy: TwoFactorPolicy) {
    this.#tokens = new RememberedTokens(writes)
    this.#connections = connections
    this.#policy = policy
    this.#select = db.prepare(
      `SELECT t.id, t.user_id, t.name, t.role, t.prefixes, t.expires_at, t.last_used_at,
              u.username, u.role AS user_role, u.disabled, u.two_factor
         FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = ?`,
    )
    this.#touch = db.prepare('UPDATE api_tokens SET last_used_at = ? WHERE token_hash = ?')
    this.#insert = db.prepare(
      'INSERT INTO api_tokens (id, user_id, name, token_hash, role, prefixes, created_at, expires_at, session_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    )
    this.#list = db.prepare(
      'SELECT id, name, role, prefixes, created_at, last_used_at, expires_at FROM api_tokens WHERE user_id = ? ORDER BY created_at, id',
    )
    this.#count = db.prepare('SELECT count(*) AS n FROM api_tokens WHERE user_id = ?')
    this.#named = db.prepare('SELECT id FROM api_tokens WHERE user_id = ? AND name = ?')
    this.#byId = db.prepare('SELECT token_hash, name FROM api_tokens WHERE user_id = ? AND id = ?')
    this.#delete = db.prepare('DELETE FROM api_tokens WHERE token_hash = ?')
    this.#othersOf = db.prepare(
      'SELECT token_hash FROM api_tokens WHERE user_id = ? AND (session_id IS NULL OR session_id != ?)',
    )
  }

  static isApiToken(token: string): boolean {
    return token.startsWith(API_TOKEN_PREFIX)
  }

  /** The token's owner (with the effective role) and the token, or null: unknown, revoked, expired, owner disabled or gone. */
  resolve(token: string): { user: AuthUser; token: ResolvedApiToken } | null {
    const read = this.#tokens.read(token, (tokenHash) => this.#select.get(tokenHash))
    const { hash: tokenHash, row } = read
    const now = Date.now()
    if (!row || row.disabled || !isRole(row.role) || !isRole(row.user_role)) return this.#tokens.forget(token)
    if (row.expires_at !== null && row.expires_at <= now) return this.#tokens.forget(token)
    if (row.last_used_at === null || now - row.last_used_at > TOUCH_EVERY_MS) runUnlessFull(this.#touch, now, tokenHash)
    this.#tokens.remember(token, read)
    return {
      user: {
        id: row.user_id,
        username: row.username,
        role: lowerRole(row.role, row.user_role),
        twoFactor: row.two_factor === 1,
        mustEnroll: this.#policy.mustEnroll(row.user_role, row.two_factor),
      },
      token: {
        id: row.id,
        name: row.name,
        hash: tokenHash,
        prefixes: row.prefixes === null ? null : (JSON.parse(row.prefixes) as string[]),
      },
    }
  }

  /** Who holds the token with this hash now (for live connections); read-only. */
  holder(tokenHash: string): SessionHolder | null {
    const row = this.#select.get(tokenHash)
    if (!row || row.disabled || !isRole(row.role) || !isRole(row.user_role)) return null
    if (row.expires_at !== null && row.expires_at <= Date.now()) return null
    return {
      userId: row.user_id,
      role: lowerRole(row.role, row.user_role),
      mustEnroll: this.#policy.mustEnroll(row.user_role, row.two_factor),
    }
  }

  hashOf(token: string): string {
    return this.#tokens.hashOf(token)
  }

  /**
   * Stores a new token of `owner` (at most their role), minted from the session with public id `sessionId`; answers it
   * and its secret, which is never readable again.
   */
  create(
    owner: { id: string; role: Role },
    spec: NewApiToken,
    sessionId: string | null,
  ): { info: ApiTokenInfo; secret: string } {
    const now = Date.now()
    if (!roleSatisfies(owner.role, spec.role))
      throw TokenErrors.roleTooHigh(`A token's role cannot be above your own (${owner.role})`)
    if (spec.expiresAt !== null && spec.expiresAt <= now) throw TokenErrors.badExpiry()
    if (this.#named.get(owner.id, spec.name))
      throw TokenErrors.nameTaken(`You already have an API token named "${spec.name}"`)
    if (this.#count.get(owner.id)!.n >= MAX_TOKENS_PER_USER) throw TokenErrors.tooMany()
    const secret = API_TOKEN_PREFIX + randomBytes(32).toString('base64url')
    const id = randomUUID()
    this.#insert.run(
      id,
      owner.id,
      spec.name,
      hashToken(secret),
      spec.role,
      spec.prefixes === null ? null : JSON.stringify(spec.prefixes),
      now,
      spec.expiresAt,
      sessionId,
    )
    return {
      secret,
      info: {
        id,
        name: spec.name,
        role: spec.role,
        prefixes: spec.prefixes,
        createdAt: iso(now)!,
        lastUsedAt: null,
        expiresAt: iso(spec.expiresAt),
      },
    }
  }

  /** A user's tokens, oldest first (expired ones too, marked by their date, until revoked). */
  list(userId: string): ApiTokenInfo[] {
    return this.#list.all(userId).map((r) => ({
      id: r.id,
      name: r.name,
      role: isRole(r.role) ? r.role : 'viewer',
      prefixes: r.prefixes === null ? null : (JSON.parse(r.prefixes) as string[]),
      createdAt: iso(r.created_at)!,
      lastUsedAt: iso(r.last_used_at),
      expiresAt: iso(r.expires_at),
    }))
  }

  /** Deletes one of `userId`'s tokens and ends what it has open at once; answers its name (404 when they have no such token). */
  revoke(userId: string, id: string): string {
    const row = this.#byId.get(userId, id)
    if (!row) throw TokenErrors.notFound()
    this.#delete.run(row.token_hash)
    this.#connections.endSession(row.token_hash, LIVE_ENDS.tokenRevoked)
    return row.name
  }

  /**
   * Deletes every token of a user, except those minted from the session with public id `keepSession`, and ends what
   * they have open; answers how many were deleted. SessionStore.revokeAccess says when.
   */
  revokeAllOf(userId: string, keepSession: string | null = null): number {
    const doomed = this.#othersOf.all(userId, keepSession ?? '')
    for (const { token_hash } of doomed) {
      this.#delete.run(token_hash)
      this.#connections.endSession(token_hash, LIVE_ENDS.tokenRevoked)
    }
    return doomed.length
  }
}
