import { MikroORM } from '@mikro-orm/sqlite'
import type { EntitySchema } from '@mikro-orm/core'
import type BetterSqlite3 from 'better-sqlite3'
import { hash } from 'node:crypto'
import { join } from 'node:path'
import { chmod, mkdir, open } from 'node:fs/promises'
import type { Database as DatabaseService } from '@hostd/sdk'
import { kernelEntities } from './entities.ts'
import { BoundSqliteDriver } from './bound-driver.ts'
import { WriteCounter } from './write-counter.ts'

export interface KernelDatabase extends DatabaseService {
  /** The better-sqlite3 handle behind the ORM, for the few hot paths measured to need prepared statements. */
  readonly native: BetterSqlite3.Database
  /** What may have written to it, counted on every statement (write-counter.ts). */
  readonly writes: WriteCounter
  /**
   * Add a plugin's entities and create or extend their tables (never drops). Given `owner` (the plugin's id), they
   * replace the entities the owner's previous load brought: a new version's (or a reload's) entities take the place
   * of the old ones, their tables extended in place, the rows kept. A change the database refuses (a NOT NULL column
   * without a default on a table with rows) throws EntityMigrationError, and the previous entities stay as they were.
   */
  addEntities(entities: EntitySchema[], owner?: string): Promise<void>
  close(): Promise<void>
}

export async function openDatabase(dataDir: string): Promise<KernelDatabase> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 })
  const file = join(dataDir, 'hostd.sqlite')
  await ownerOnly(file)
  const orm = await MikroORM.init({
    // Values bound as parameters, never inlined into the SQL text (see bound-driver.ts).
    driver: BoundSqliteDriver,
    dbName: file,
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
  await updateSchema(orm, native)
  const known = new Set<unknown>(kernelEntities)
  /** Each plugin's entities as its running (or last) load brought them. */
  const owned = new Map<string, EntitySchema[]>()
  return {
    orm,
    native,
    writes,
    em: () => orm.em.fork(),
    async addEntities(entities, owner) {
      const fresh = entities.filter((e) => !known.has(e))
      const replaced = owner ? (owned.get(owner) ?? []).filter((e) => !entities.includes(e)) : []
      if (fresh.length === 0 && replaced.length === 0) return
      orm.discoverEntity(fresh, replaced)
      try {
        await updateSchema(orm, native)
      } catch (err) {
        orm.discoverEntity(replaced, fresh) // the previous load's entities, as they were
        throw new EntityMigrationError(err)
      }
      for (const e of replaced) {
        known.delete(e)
        retarget(orm, e)
      }
      fresh.forEach((e) => known.add(e))
      if (owner) owned.set(owner, [...entities])
    },
    close: () => orm.close(),
  }
}

/** A plugin's tables could not be brought to what its new entities ask for (the database refused the change). */
export class EntityMigrationError extends Error {
  constructor(cause: unknown) {
    super(`its tables could not be migrated: ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
    this.name = 'EntityMigrationError'
  }
}

/**
 * Points a replaced entity (the previous load's, still serving until the new load takes over) at the metadata of the
 * entity that replaced it (same name, else same table): the old version's queries keep working meanwhile, on the
 * extended table. MikroORM resolves an EntitySchema by `meta.class`; once replaced it would find none.
 */
function retarget(orm: MikroORM, replaced: EntitySchema): void {
  const old = replaced.meta
  const metas = [...orm.getMetadata().getAll().values()]
  const next =
    metas.find((meta) => meta.className === old.className) ?? metas.find((meta) => meta.tableName === old.tableName)
  if (next) old.class = next.class
}

/**
 * The database holds password hashes, sealed two-factor secrets and every session: only the daemon's user may read it.
 * SQLite would create it with the process's umask (0644 by default) and gives its `-wal` file the mode of the main
 * file, so the file is made (or, made by an older version, changed to) 0600 before SQLite opens it.
 */
async function ownerOnly(file: string): Promise<void> {
  await (await open(file, 'a', 0o600)).close()
  await chmod(file, 0o600)
  await chmod(`${file}-wal`, 0o600).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err
  })
}

/** Where updateSchema records the schemas it has seen agree. Not an entity: the ORM's safe update leaves it alone. */
const SCHEMA_STATE = 'hostd_schema_state'

/**
 * Creates and extends the tables the known entities need (never drops), unless neither side changed since an update
 * last ran: the schema the entities ask for (the SQL MikroORM would create them with) and the database's own for
 * their tables (sqlite_master) are both what they were then. Comparing costs 2-9 ms; the update's introspection of
 * every table 15-50 ms each time it runs (once for the kernel's entities and once per plugin that brings some), about
 * 60 ms of every restart. A table changed by hand changes sqlite_master, so the update runs again.
 */
async function updateSchema(orm: MikroORM, native: BetterSqlite3.Database): Promise<void> {
  native.exec(`CREATE TABLE IF NOT EXISTS ${SCHEMA_STATE} (expected TEXT PRIMARY KEY, actual TEXT NOT NULL)`)
  const digest = (text: string) => hash('sha256', text)
  const tables = new Set([...orm.getMetadata().getAll().values()].map((meta) => meta.tableName))
  const actual = () =>
    digest(
      JSON.stringify(
        (
          native.prepare('SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name').all() as {
            tbl_name: string
          }[]
        ).filter((row) => tables.has(row.tbl_name)),
      ),
    )
  const expected = digest(await orm.schema.getCreateSchemaSQL())
  const seen = native.prepare(`SELECT actual FROM ${SCHEMA_STATE} WHERE expected = ?`).get(expected) as
    | { actual: string }
    | undefined
  if (seen?.actual === actual()) return
  await orm.schema.update({ safe: true })
  native
    .prepare(
      `INSERT INTO ${SCHEMA_STATE} (expected, actual) VALUES (?, ?) ON CONFLICT (expected) DO UPDATE SET actual = excluded.actual`,
    )
    .run(expected, actual())
}
