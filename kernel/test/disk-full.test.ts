/**
 * The database layer on a disk that really fills up (a tmpfs of a few MiB): a write that finds no room fails with an
 * error the kernel answers as 507 HOSTD_STORAGE_FULL naming the disk, keeps nothing of itself, and once space is
 * freed every query works again, on the same open database. On main the first failed ORM COMMIT left Kysely's
 * connection lock held (SQLite had rolled the transaction back itself, so the ROLLBACK after it failed too): every
 * later ORM query waited for ever. Such a query here never resolving fails the test by its timeout.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { openDatabase, type KernelDatabase } from '../src/db/database.ts'
import { SettingEntity } from '../src/db/entities.ts'
import { storageFullError } from '../src/db/storage.ts'
import { toHostdError } from '../src/http/errors.ts'
import { mountTmpfs, type Tmpfs } from '../../test/support/tmpfs.ts'

/** A value large enough to need new pages in the WAL whatever slack it has. */
const BIG = 'x'.repeat(64 * 1024)

describe('a full disk under the database', () => {
  let disk: Tmpfs
  let db: KernelDatabase
  const dataDir = () => join(disk.dir, 'data')
  const count = () => db.em().count(SettingEntity, { scope: 'test' })

  beforeAll(async () => {
    disk = await mountTmpfs(8)
    db = await openDatabase(dataDir())
  })
  afterEach(() => disk.free())
  afterAll(async () => {
    await db?.close()
    await disk?.unmount()
  })

  it('a failed flush (its COMMIT) is a 507 naming the disk, keeps nothing, and the ORM works again once space is freed', async () => {
    expect(await disk.fill()).toBe(0)
    const em = db.em()
    em.create(SettingEntity, { scope: 'test', key: 'flushed', value: { text: BIG } })
    const err = await em.flush().then(
      () => null,
      (e: unknown) => e,
    )
    expect(err, 'the flush must fail on a full disk').not.toBeNull()
    expect(db.native.inTransaction).toBe(false)

    await disk.free()
    // On main this never resolved.
    expect(await count()).toBe(0)
    const answer = toHostdError(err)
    expect(answer).toMatchObject({ statusCode: 507, code: 'HOSTD_STORAGE_FULL' })
    expect(answer.message).toContain(`The disk holding ${dataDir()} is full`)
    const again = db.em()
    again.create(SettingEntity, { scope: 'test', key: 'flushed', value: { text: BIG } })
    await again.flush()
    expect(await count()).toBe(1)
  })

  it('em.begin() / em.commit() without a rollback after the failed commit does not hold the connection either', async () => {
    expect(await disk.fill()).toBe(0)
    const em = db.em()
    await em.begin()
    em.create(SettingEntity, { scope: 'test', key: 'explicit', value: { text: BIG } })
    const err = await em.commit().then(
      () => null,
      (e: unknown) => e,
    )
    expect(storageFullError(err)?.code).toBe('HOSTD_STORAGE_FULL')
    // The caller does not roll back: the connection is free all the same.
    await disk.free()
    expect(await db.em().findOne(SettingEntity, { scope: 'test', key: 'explicit' })).toBeNull()
    await db.em().upsert(SettingEntity, { scope: 'test', key: 'after', value: { ok: true } })
    expect(await count()).toBe(2)
  })

  it('a statement outside a transaction, by the ORM or a prepared statement, is a 507 too, and works once freed', async () => {
    expect(await disk.fill()).toBe(0)
    const upsert = await db
      .em()
      .upsert(SettingEntity, { scope: 'test', key: 'upserted', value: { text: BIG } })
      .then(
        () => null,
        (e: unknown) => e,
      )
    expect(toHostdError(upsert)).toMatchObject({ statusCode: 507, code: 'HOSTD_STORAGE_FULL' })
    const insert = db.native.prepare('INSERT INTO settings (scope, key, value) VALUES (?, ?, ?)')
    let native: unknown = null
    try {
      insert.run('test', 'native', JSON.stringify({ text: BIG }))
    } catch (e) {
      native = e
    }
    expect(toHostdError(native).message).toContain(`The disk holding ${dataDir()} is full`)
    await disk.free()
    insert.run('test', 'native', JSON.stringify({ text: BIG }))
    expect(await count()).toBe(3)
  })

  it('closes without waiting on a held lock', async () => {
    expect(await disk.fill()).toBe(0)
    const em = db.em()
    em.create(SettingEntity, { scope: 'test', key: 'last', value: { text: BIG } })
    await expect(em.flush()).rejects.toThrow()
    await disk.free()
    await db.close()
    db = await openDatabase(dataDir())
    expect(await count()).toBe(3)
  })
})
