import { MikroORM } from '@mikro-orm/sqlite'
import type { EntitySchema } from '@mikro-orm/core'
import type BetterSqlite3 from 'better-sqlite3'
import { join } from 'node:path'
import { mkdir } from 'node:fs/promises'
import type { Database as DatabaseService } from '@hostd/sdk'
import { kernelEntities } from './entities.ts'
import { BoundSqliteDriver } from './bound-driver.ts'
import { WriteCounter } from './write-counter.ts'

export interface KernelDatabase extends DatabaseService {
  /** The better-sqlite3 handle behind the ORM, for the few hot paths measured to need prepared statements. */
  readonly native: BetterSqlite3.Database
  /** What may have written to it, counted on every statement (write-counter.ts). */
  readonly writes: WriteCounter
  /** Add a plugin's entities and create or extend their tables (never drops). */
  addEntities(entities: EntitySchema<any, any>[]): Promise<void>
  close(): Promise<void>
}

export async function openDatabase(dataDir: string): Promise<KernelDatabase> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 })
  const orm = await MikroORM.init({
    // Values bound as parameters, never inlined into the SQL text (see bound-driver.ts).
    driver: BoundSqliteDriver,
    dbName: join(dataDir, 'hostd.sqlite'),
    entities: kernelEntities,
    debug: false,
    allowGlobalContext: false,
  })
  const native = (await orm.em.getConnection().getNativeClient()) as BetterSqlite3.Database
  const writes = new WriteCounter(native)
  // The daemon is this file's only user: holding the lock spares every statement its lock syscalls and the
  // WAL shared-memory index (measured: hostd/bare 0.46 -> 0.53 in npm run bench). Stop the daemon to copy it.
  native.pragma('locking_mode = EXCLUSIVE')
  native.pragma('journal_mode = WAL')
  native.pragma('busy_timeout = 5000')
  native.pragma('foreign_keys = ON')
  await orm.schema.update({ safe: true })
  const known = new Set<unknown>(kernelEntities)
  return {
    orm,
    native,
    writes,
    em: () => orm.em.fork(),
    async addEntities(entities) {
      const fresh = entities.filter((e) => !known.has(e))
      if (fresh.length === 0) return
      orm.discoverEntity(fresh)
      fresh.forEach((e) => known.add(e))
      await orm.schema.update({ safe: true })
    },
    close: () => orm.close(),
  }
}
