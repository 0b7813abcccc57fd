import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase, type KernelDatabase } from './database.ts'
import { SettingEntity, UserEntity } from './entities.ts'

/** Every way the daemon writes moves the count; reads do not; a transaction is never settled. */
describe('the write counter on the daemon database', () => {
  let dir: string
  let db: KernelDatabase

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hostd-writes-'))
    db = await openDatabase(dir)
  })
  afterAll(async () => {
    await db.close()
    await rm(dir, { recursive: true, force: true })
  })

  const moved = async (action: () => unknown): Promise<boolean> => {
    const before = db.writes.count
    await action()
    return db.writes.count !== before
  }

  it('reads leave it alone: prepared selects, MikroORM finds, pragmas that only read', async () => {
    const select = db.native.prepare('SELECT count(*) AS n FROM users')
    expect(await moved(() => select.get())).toBe(false)
    expect(await moved(() => select.all())).toBe(false)
    expect(await moved(() => [...select.iterate()])).toBe(false)
    expect(await moved(() => db.em().find(UserEntity, {}))).toBe(false)
    expect(await moved(() => db.native.pragma('journal_mode'))).toBe(false)
    expect(db.writes.settled).toBe(true)
  })

  it('writes move it: a prepared statement run again, one with RETURNING, exec, and MikroORM flushes', async () => {
    const insert = db.native.prepare("INSERT INTO settings (scope, key, value) VALUES ('t', ?, '1')")
    expect(await moved(() => insert.run('a'))).toBe(true)
    expect(await moved(() => insert.run('b'))).toBe(true)
    expect(
      await moved(() => db.native.prepare("UPDATE settings SET value = '2' WHERE scope = 't' RETURNING key").all()),
    ).toBe(true)
    expect(await moved(() => db.native.exec("DELETE FROM settings WHERE scope = 't'"))).toBe(true)
    expect(
      await moved(async () => {
        const em = db.em()
        em.create(SettingEntity, { scope: 't', key: 'orm', value: { on: true } })
        await em.flush()
      }),
    ).toBe(true)
    expect(await moved(() => db.em().nativeDelete(SettingEntity, { scope: 't' }))).toBe(true)
  })

  it('is not settled inside a transaction, which a rollback could undo', async () => {
    const seen: boolean[] = []
    const rolledBack = db.native.transaction(() => {
      seen.push(db.writes.settled)
      db.native.prepare("INSERT INTO settings (scope, key, value) VALUES ('t', 'rolled', '1')").run()
      throw new Error('roll back')
    })
    expect(rolledBack).toThrow('roll back')
    expect(seen).toEqual([false])
    expect(db.writes.settled).toBe(true)
    expect(db.native.prepare("SELECT count(*) AS n FROM settings WHERE key = 'rolled'").get()).toEqual({ n: 0 })
  })
})
