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

export const kernelEntities = [UserEntity, SessionEntity, AuditEntity, SettingEntity]
