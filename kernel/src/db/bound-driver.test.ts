import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase, type KernelDatabase } from './database.ts'
import { AuditEntity, SettingEntity, UserEntity } from './entities.ts'

/**
 * The ORM's queries reach SQLite with their values bound, and mean what the inlined literals meant: booleans, dates,
 * JSON, `in` lists, counts, NUL and lone surrogates. Every prepared statement is recorded and must hold no value.
 */
describe('bound parameters under MikroORM', () => {
  let dir: string
  let db: KernelDatabase
  const prepared: string[] = []

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hostd-bound-'))
    db = await openDatabase(dir)
    const prepare = db.native.prepare.bind(db.native)
    db.native.prepare = ((sql: string) => {
      prepared.push(sql)
      return prepare(sql)
    }) as typeof db.native.prepare
  })
  afterAll(async () => {
    await db.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('finds, counts, updates and deletes with bound values of every kind', async () => {
    const em = db.em()
    const now = new Date()
    for (const [id, disabled] of [
      ['a-1', false],
      ['b-2', true],
      ['c\u0000x', false],
    ] as const) {
      em.create(UserEntity, {
        id,
        username: `user ${id}`,
        usernameKey: `key-${id}`,
        passwordHash: 'h',
        role: 'viewer',
        disabled,
        twoFactor: false,
        createdAt: now,
        updatedAt: now,
      })
    }
    await em.flush()
    const fresh = db.em()
    expect((await fresh.find(UserEntity, { disabled: false }, { orderBy: { id: 'asc' } })).map((u) => u.id)).toEqual([
      'a-1',
      'c\u0000x',
    ])
    expect(await fresh.count(UserEntity, { id: { $in: ['a-1', 'b-2', 'nope'] } })).toBe(2)
    expect(await fresh.findOne(UserEntity, { id: 'c\u0000x' })).toMatchObject({ username: 'user c\u0000x' })
    expect(await fresh.findOne(UserEntity, { id: '\ud800' })).toBeNull()
    expect(
      await fresh.count(UserEntity, { createdAt: { $gte: new Date(now.getTime() - 1000) }, id: { $ne: 'b-2' } }),
    ).toBe(2)
    await fresh.nativeUpdate(UserEntity, { id: 'a-1' }, { role: 'admin' })
    expect((await db.em().findOneOrFail(UserEntity, { id: 'a-1' })).role).toBe('admin')
    await db.em().nativeDelete(UserEntity, { id: { $in: ['b-2'] } })
    expect(await db.em().count(UserEntity, {})).toBe(2)

    await db.em().upsert(SettingEntity, {
      scope: 's',
      key: "it's",
      value: { nested: [1, 'two', null], quote: "'; drop table users; --" },
    })
    expect((await db.em().findOneOrFail(SettingEntity, { scope: 's', key: "it's" })).value).toEqual({
      nested: [1, 'two', null],
      quote: "'; drop table users; --",
    })

    const audit = db.em()
    audit.create(AuditEntity, {
      time: now,
      userId: null,
      username: null,
      ip: null,
      action: 'x',
      target: 'y',
      result: 'success',
      detail: { a: 1 },
    })
    await audit.flush()
    const [rows, total] = await db
      .em()
      .findAndCount(AuditEntity, { time: { $gte: new Date(now.getTime() - 1) } }, { limit: 10, offset: 0 })
    expect([rows.map((r) => r.detail), total]).toEqual([[{ a: 1 }], 1])

    const raw = await db.em().getConnection().execute('SELECT ? AS n, ? AS t, ? AS b', [5, 'text', true], 'get')
    expect(raw).toEqual({ n: 5, t: 'text', b: 1 })

    for (const value of ['a-1', 'b-2', 'c\u0000x', "it's", 'drop table', 'text']) {
      expect(
        prepared.filter((sql) => sql.includes(value)),
        value,
      ).toEqual([])
    }
  })
})
