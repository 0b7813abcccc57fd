import { randomUUID } from 'node:crypto'
import { Mutex, defineError, isRole, type Role } from '@hostd/sdk'
import type { KernelDatabase } from '../db/database.ts'
import { UserEntity } from '../db/entities.ts'
import { hashPassword, passwordWeakness, verifyPassword } from '../auth/passwords.ts'
import type { SessionStore } from '../auth/sessions.ts'
import type { User } from './schemas.ts'

export const UserErrors = {
  notFound: defineError('HOSTD_USERS_NOT_FOUND', 404, 'No such user'),
  taken: defineError('HOSTD_USERS_USERNAME_TAKEN', 409, 'That username is taken'),
  weakPassword: defineError('HOSTD_USERS_WEAK_PASSWORD', 400, 'Password too weak'),
  lastAdmin: defineError(
    'HOSTD_USERS_LAST_ADMIN',
    409,
    'This is the last enabled admin: add or enable another admin first',
  ),
  wrongPassword: defineError('HOSTD_USERS_WRONG_PASSWORD', 400, 'The current password is wrong'),
  setupDone: defineError('HOSTD_SETUP_ALREADY_DONE', 409, 'Setup is already done: the first admin exists'),
} as const

type UserRow = {
  id: string
  username: string
  role: string
  disabled: boolean
  twoFactor: boolean
  passwordHash: string
}

export function toUser(row: UserRow): User {
  return {
    id: row.id,
    username: row.username,
    role: isRole(row.role) ? row.role : 'viewer',
    disabled: row.disabled,
    twoFactor: row.twoFactor,
  }
}

/**
 * Users and their invariants: unique names (case-insensitively), strong passwords, and always one
 * enabled admin. Mutations are serialized so two concurrent requests cannot both pass a check.
 */
export class UserService {
  readonly #db: KernelDatabase
  readonly #sessions: SessionStore
  readonly #mutex = new Mutex()

  constructor(db: KernelDatabase, sessions: SessionStore) {
    this.#db = db
    this.#sessions = sessions
  }

  async needsSetup(): Promise<boolean> {
    return (await this.#db.em().count(UserEntity, {})) === 0
  }

  /**
   * Creates the first admin exactly once, however many requests race for it. Once done, the answer is 409 whatever
   * the password: the state is checked before the password policy, so the answer tells the truth.
   */
  setup(username: string, password: string): Promise<User> {
    return this.#mutex.run(async () => {
      if (!(await this.needsSetup())) throw UserErrors.setupDone()
      this.#checkPassword(password, username)
      return this.#insert(username, password, 'admin')
    })
  }

  async list(): Promise<User[]> {
    const rows = await this.#db.em().find(UserEntity, {}, { orderBy: { createdAt: 'asc' } })
    return rows.map(toUser)
  }

  async get(id: string): Promise<User> {
    return toUser(await this.#row(id))
  }

  /** The stored row by id, password hash included (a sign-in's second step checks the password has not changed). */
  findById(id: string): Promise<UserRow | null> {
    return this.#db.em().findOne(UserEntity, { id })
  }

  /** The stored row by username, for sign-in. */
  findByUsername(username: string): Promise<UserRow | null> {
    return this.#db.em().findOne(UserEntity, { usernameKey: username.toLowerCase() })
  }

  create(username: string, password: string, role: Role): Promise<User> {
    this.#checkPassword(password, username)
    return this.#mutex.run(() => this.#insert(username, password, role))
  }

  /** A lower role closes the user's open sockets and streams that need more (4403). */
  setRole(id: string, role: Role): Promise<User> {
    return this.#update(id, async (row, em) => {
      if (row.role === 'admin' && role !== 'admin' && !row.disabled) await this.#guardLastAdmin(em, id)
      row.role = role
    }).then((user) => {
      this.#sessions.connections.recheck(id)
      return user
    })
  }

  rename(id: string, username: string): Promise<User> {
    return this.#update(id, async (row, em) => {
      const key = username.toLowerCase()
      const other = await em.findOne(UserEntity, { usernameKey: key })
      if (other && other.id !== id) throw UserErrors.taken(`The username "${username}" is taken`)
      row.username = username
      row.usernameKey = key
    })
  }

  /** Disabling ends the user's sessions and API tokens: enabling the account again brings none of them back. */
  setDisabled(id: string, disabled: boolean): Promise<User> {
    return this.#update(id, async (row, em) => {
      if (disabled && row.role === 'admin' && !row.disabled) await this.#guardLastAdmin(em, id)
      row.disabled = disabled
    }).then((user) => {
      if (disabled) this.#sessions.revokeAccess(id)
      return user
    })
  }

  /** An admin sets someone's password: all of that user's sessions and API tokens end. */
  async resetPassword(id: string, password: string): Promise<User> {
    const row = await this.#row(id)
    this.#checkPassword(password, row.username)
    const hash = await hashPassword(password)
    const user = await this.#update(id, async (r) => {
      r.passwordHash = hash
    })
    this.#sessions.revokeAccess(id)
    return user
  }

  /** Whether `password` is the user's (for changes that ask for it again). */
  async passwordMatches(id: string, password: string): Promise<boolean> {
    return verifyPassword((await this.#row(id)).passwordHash, password)
  }

  /** A user changes their own password: their other sessions end, and API tokens not minted from this one. */
  async changeOwnPassword(id: string, current: string, next: string, keepToken: string | null): Promise<void> {
    const row = await this.#row(id)
    if (!(await verifyPassword(row.passwordHash, current))) throw UserErrors.wrongPassword()
    this.#checkPassword(next, row.username)
    const hash = await hashPassword(next)
    await this.#update(id, async (r) => {
      r.passwordHash = hash
    })
    this.#sessions.revokeAccess(id, keepToken)
  }

  remove(id: string): Promise<User> {
    return this.#mutex.run(async () => {
      const em = this.#db.em()
      const row = await em.findOne(UserEntity, { id })
      if (!row) throw UserErrors.notFound()
      if (row.role === 'admin' && !row.disabled) await this.#guardLastAdmin(em, id)
      const user = toUser(row)
      em.remove(row)
      await em.flush()
      this.#sessions.revokeAccess(id)
      return user
    })
  }

  #checkPassword(password: string, username: string): void {
    const weakness = passwordWeakness(password, username)
    if (weakness) throw UserErrors.weakPassword(weakness)
  }

  async #insert(username: string, password: string, role: Role): Promise<User> {
    const em = this.#db.em()
    if (await em.findOne(UserEntity, { usernameKey: username.toLowerCase() }))
      throw UserErrors.taken(`The username "${username}" is taken`)
    const now = new Date()
    const row = em.create(UserEntity, {
      id: randomUUID(),
      username,
      usernameKey: username.toLowerCase(),
      passwordHash: await hashPassword(password),
      role,
      disabled: false,
      twoFactor: false,
      createdAt: now,
      updatedAt: now,
    })
    await em.flush()
    return toUser(row)
  }

  async #row(id: string): Promise<UserRow> {
    const row = await this.#db.em().findOne(UserEntity, { id })
    if (!row) throw UserErrors.notFound()
    return row
  }

  #update(
    id: string,
    change: (
      row: UserRow & { usernameKey: string; updatedAt: Date },
      em: ReturnType<KernelDatabase['em']>,
    ) => Promise<void>,
  ): Promise<User> {
    return this.#mutex.run(async () => {
      const em = this.#db.em()
      const row = await em.findOne(UserEntity, { id })
      if (!row) throw UserErrors.notFound()
      await change(row, em)
      row.updatedAt = new Date()
      await em.flush()
      return toUser(row)
    })
  }

  async #guardLastAdmin(em: ReturnType<KernelDatabase['em']>, exceptId: string): Promise<void> {
    const others = await em.count(UserEntity, { role: 'admin', disabled: false, id: { $ne: exceptId } })
    if (others === 0) throw UserErrors.lastAdmin()
  }
}
