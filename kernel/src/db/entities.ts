import { defineEntity, p } from '@mikro-orm/core'

/** The kernel's own tables. Plugins declare theirs in their definition. */
export const UserEntity = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: p.string().primary(),
    username: p.string(),
    /** Lower-cased username: the unique key, so names are unique case-insensitively. */
    usernameKey: p.string().unique(),
    passwordHash: p.string().hidden(),
    role: p.string(),
    disabled: p.boolean().default(false),
    twoFactor: p.boolean().default(false),
    /** The confirmed TOTP secret, sealed with the data dir's key (auth/secret-box.ts); null without two-factor. */
    totpSecret: p.string().nullable().hidden(),
    /** A secret being enrolled, sealed too: becomes totpSecret when a code from it is confirmed. */
    totpPending: p.string().nullable().hidden(),
    /** The last TOTP time step used: a code of this step or an earlier one is refused (no replay). */
    totpLastStep: p.integer().nullable(),
    /** Keyed hashes of the unused recovery codes (auth/secret-box.ts `mac`); each is removed when used. */
    recoveryCodes: p.json<string[]>().nullable().hidden(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
})

export const SessionEntity = defineEntity({
  name: 'Session',
  tableName: 'sessions',
  properties: {
    /** SHA-256 of the token; the token itself is never stored. */
    tokenHash: p.string().primary(),
    userId: p.string().index(),
    createdAt: p.integer(),
    lastSeenAt: p.integer(),
    ip: p.string().nullable(),
    /** The session's public id (lists and "end this session"); never the token or its hash. */
    id: p.string().nullable().index(),
    userAgent: p.string().nullable(),
    /** When the password was last given for this session (sign-in or re-authentication): "sudo mode" (sessions.ts). Null: at createdAt. */
    authAt: p.integer().nullable(),
  },
})

/** API tokens for scripts: only the SHA-256 of the secret is stored (auth/api-tokens.ts). */
export const ApiTokenEntity = defineEntity({
  name: 'ApiToken',
  tableName: 'api_tokens',
  properties: {
    id: p.string().primary(),
    userId: p.string().index(),
    name: p.string(),
    tokenHash: p.string().unique(),
    /** The most the token may do; its owner's current role caps it on every request. */
    role: p.string(),
    /** Path prefixes it may call (JSON array), or null for any path. */
    prefixes: p.json<string[]>().nullable(),
    createdAt: p.integer(),
    lastUsedAt: p.integer().nullable(),
    expiresAt: p.integer().nullable(),
    /** The public id of the session that minted it: a security change made from that session keeps it (sessions.ts). */
    sessionId: p.string().nullable(),
  },
})

export const AuditEntity = defineEntity({
  name: 'AuditRecord',
  tableName: 'audit',
  properties: {
    id: p.integer().primary().autoincrement(),
    time: p.datetime().index(),
    userId: p.string().nullable(),
    username: p.string().nullable(),
    ip: p.string().nullable(),
    action: p.string(),
    target: p.string().nullable(),
    result: p.string(),
    detail: p.json().nullable(),
  },
})

export const SettingEntity = defineEntity({
  name: 'Setting',
  tableName: 'settings',
  properties: {
    scope: p.string().primary(),
    key: p.string().primary(),
    value: p.json(),
  },
})

export const kernelEntities = [UserEntity, SessionEntity, ApiTokenEntity, AuditEntity, SettingEntity]
