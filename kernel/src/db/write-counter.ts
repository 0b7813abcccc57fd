import type BetterSqlite3 from 'better-sqlite3'
import { noteFile } from './storage.ts'

const STATEMENT_RUNS = ['run', 'get', 'all', 'iterate'] as const

/**
 * Counts what may have changed the database: every run of a statement SQLite does not call read-only
 * (`Statement.readonly`: INSERT, UPDATE, DELETE, DDL, a write with RETURNING) and every `exec`. Installed on the
 * daemon's one connection as it opens, before any statement is prepared, so it sees MikroORM's statements (Kysely
 * prepares each on this handle) and the stores' own alike. No other process writes: the daemon holds the file's
 * exclusive lock (database.ts).
 *
 * So a row read at count N is still what the database holds while the count is N. That is what lets the session
 * check keep a row between requests and still see a change on the very next one (docs/ARCHITECTURE.md, "Why the
 * session check skips the ORM"). A read made inside a transaction is never to be kept: a ROLLBACK takes writes back
 * and is itself read-only to SQLite.
 *
 * A write that fails has the database file named on its error (storage.ts: a full disk's 507 says which disk).
 */
export class WriteCounter {
  readonly #db: BetterSqlite3.Database
  #count = 0

  constructor(db: BetterSqlite3.Database) {
    this.#db = db
    const prepare = db.prepare.bind(db)
    const exec = db.exec.bind(db)
    const counted = <F extends (...args: never[]) => unknown>(run: F): F =>
      ((...args: Parameters<F>) => {
        this.#count++
        try {
          return run(...args)
        } catch (err) {
          throw noteFile(err, db.name)
        }
      }) as F
    db.prepare = ((source: string) => {
      const statement = prepare(source)
      if (!statement.readonly) {
        for (const name of STATEMENT_RUNS)
          (statement as unknown as Record<string, unknown>)[name] = counted(statement[name].bind(statement))
      }
      return statement
    }) as typeof db.prepare
    db.exec = counted(exec)
  }

  /** Changes whenever something may have been written; equal readings mean nothing was written between them. */
  get count(): number {
    return this.#count
  }

  /** Whether a read made now may be kept: not inside a transaction, which a rollback could undo. */
  get settled(): boolean {
    return !this.#db.inTransaction
  }
}
