/**
 * A third-party plugin's own database: one SQLite file in its data folder (`<data dir>/plugin-data/<id>/plugin.sqlite`),
 * never the kernel's, whose users and sessions it must not reach. It is what `tokens.database` gives a third-party
 * plugin, isolated (the runner opens it inside the sandbox) or in the daemon's process (the kernel opens it): the
 * same file, so a plugin keeps its rows when an admin trusts it or stops trusting it.
 *
 * Its entities' tables are created and extended (never dropped) as each load opens it, while the version it replaces
 * may still be serving from the same file; a change SQLite refuses fails the new load, naming the table.
 */
import { MikroORM, type EntitySchema } from '@mikro-orm/core'
import { SqliteDriver } from '@mikro-orm/sqlite'
import type { Database } from '../tokens.ts'

/** The file's name in the plugin's data folder. */
export const PLUGIN_DATABASE_FILE = 'plugin.sqlite'

/** The error code of a load whose tables could not be migrated (the kernel keeps the previous version serving). */
export const MIGRATION_FAILED = 'HOSTD_PLUGIN_MIGRATION_FAILED'

export interface PluginDatabase extends Database {
  close(): Promise<void>
}

/** Opens (creating) the plugin's database at `file` and brings its tables to what `entities` ask for. */
export async function openPluginDatabase(file: string, entities: readonly EntitySchema[]): Promise<PluginDatabase> {
  const orm = await MikroORM.init({
    driver: SqliteDriver,
    dbName: file,
    entities: [...entities],
    debug: false,
    allowGlobalContext: false,
    // No entities is allowed: a plugin may ask for tokens.database and use raw SQL through the ORM's connection.
    discovery: { warnWhenNoEntities: false },
  })
  const native = (await orm.em.getConnection().getNativeClient()) as {
    pragma(text: string): unknown
  }
  // Two loads of one plugin (an upgrade) share the file for a moment: WAL lets the old one read while the new migrates.
  native.pragma('journal_mode = WAL')
  native.pragma('busy_timeout = 5000')
  native.pragma('foreign_keys = ON')
  if (entities.length > 0) {
    try {
      await orm.schema.update({ safe: true })
    } catch (err) {
      await orm.close()
      // The database's own words; the kernel says which tables could not be migrated (EntityMigrationError).
      const error = new Error(err instanceof Error ? err.message : String(err)) as Error & {
        code: string
        statusCode: number
      }
      error.name = 'HostdError'
      error.code = MIGRATION_FAILED
      error.statusCode = 409
      throw error
    }
  }
  return { orm, em: () => orm.em.fork(), close: () => orm.close() }
}
