import type BetterSqlite3 from 'better-sqlite3'
import { CompiledQuery, type Dialect, type Driver } from 'kysely'
import {
  isRaw,
  JsonProperty,
  raw,
  Utils,
  type AnyEntity,
  type Configuration,
  type Constructor,
  type Dictionary,
  type EntityData,
  type LoggingOptions,
  type Platform,
  type QueryResult,
  type RawQueryFragment,
  type Transaction,
  type TransactionEventBroadcaster,
} from '@mikro-orm/core'
import { AbstractSqlDriver, NativeQueryBuilder, SqlitePlatform } from '@mikro-orm/sql'
import { MikroORM as SqliteMikroORM, SqliteConnection } from '@mikro-orm/sqlite'
import { noteFile } from './storage.ts'

/**
 * MikroORM 7 executes every query as text with its values inlined: `AbstractSqlConnection.execute` runs
 * `platform.formatQuery(sql, params)` (each value escaped into a quoted literal) and hands the result to Kysely with
 * no parameters (mikro-orm#6827, #8001; deliberate upstream, no option turns it off). Escaping keeps quotes out, but
 * the value is still SQL text: SQLite reads the text only up to a NUL, so an id holding one made the statement
 * unparseable ("unrecognized token", a 500), and every statement had a new text. This connection runs the same SQL
 * with its values bound as parameters instead: `?` stays a placeholder, the value goes to better-sqlite3 apart
 * from the text.
 *
 * Values are bound as SQLite would have read the literal: a safe integer (and a boolean, a Date as epoch ms) as an
 * INTEGER, other numbers as REAL, strings as TEXT, Buffers as BLOB, plain objects as their JSON text, an array as one
 * placeholder per element (MikroORM's `in (?)`), a raw fragment as its own SQL with its own parameters.
 * Identifiers (`??`) stay inlined, quoted, as before: they are names from the entity metadata, not values.
 *
 * It also gives Kysely's connection back when SQLite has ended a transaction on its own (see `endedByServer`).
 */
export class BoundSqliteConnection extends SqliteConnection {
  /** The better-sqlite3 handle (SqliteConnection keeps it private), set when the dialect is made. */
  #native: BetterSqlite3.Database | null = null

  override createKyselyDialect(options: Dictionary): Dialect {
    const dialect = super.createKyselyDialect(options)
    const native = (this as unknown as { database: BetterSqlite3.Database }).database
    this.#native = native
    const createDriver = dialect.createDriver.bind(dialect)
    dialect.createDriver = () => endedByServer(createDriver(), native)
    return dialect
  }

  /**
   * A COMMIT that failed after SQLite had already rolled the transaction back (a full disk: SQLITE_FULL, or an I/O
   * error) leaves Kysely's transaction neither committed nor rolled back, holding the one connection's lock. MikroORM's
   * `transactional` rolls back next, but `em.begin()`/`em.commit()` leave that to the caller: the transaction, which
   * has ended, is rolled back here at once (no SQL runs, see `endedByServer`), so the lock is released whoever called.
   */
  override async commit(
    ctx: KyselyTransaction,
    eventBroadcaster?: TransactionEventBroadcaster,
    loggerContext?: LoggingOptions,
  ): Promise<void> {
    try {
      await super.commit(ctx, eventBroadcaster, loggerContext)
    } catch (err) {
      const native = this.#native
      const topLevel = !('savepointName' in ctx)
      if (native && topLevel && !native.inTransaction && !ctx.isCommitted && !ctx.isRolledBack)
        await ctx.rollback().execute()
      throw native ? noteFile(err, native.name) : err
    }
  }

  /** A transaction `commit` above already rolled back is not rolled back twice (Kysely would throw). */
  override async rollback(
    ctx: KyselyTransaction,
    eventBroadcaster?: TransactionEventBroadcaster,
    loggerContext?: LoggingOptions,
  ): Promise<void> {
    if (ctx.isRolledBack) return
    await super.rollback(ctx, eventBroadcaster, loggerContext)
  }

  override async execute<
    T extends QueryResult | EntityData<AnyEntity> | EntityData<AnyEntity>[] = EntityData<AnyEntity>[],
  >(
    query: SqlQuery,
    params: SqlParams = [],
    method: 'all' | 'get' | 'run' = 'all',
    ctx?: Transaction,
    loggerContext?: LoggingOptions,
  ): Promise<T> {
    await this.ensureConnection()
    const bound = this.#bind(query, params)
    const { abort, rest } = splitAbort(loggerContext)
    return this.executeQuery(
      bound.sql,
      async () => {
        const res = await (ctx ?? this.getClient()).executeQuery(CompiledQuery.raw(bound.sql, bound.values), abort)
        return this.transformRawResult<T>(res, method)
      },
      { query: bound.sql, params: bound.values, ...rest },
    )
  }

  override async *stream<T extends EntityData<AnyEntity>>(
    query: SqlQuery,
    params: SqlParams = [],
    ctx?: Transaction,
    loggerContext?: LoggingOptions,
    chunkSize?: number,
  ): AsyncIterableIterator<T> {
    await this.ensureConnection()
    const bound = this.#bind(query, params)
    const { abort } = splitAbort(loggerContext)
    // The stub MikroORM streams with: Kysely's SQLite driver streams only a query whose root node is a select.
    const compiled = {
      query: { kind: 'SelectQueryNode' },
      sql: bound.sql,
      parameters: bound.values,
      queryId: undefined,
    } as unknown as CompiledQuery
    const rows = (ctx ?? this.getClient())
      .getExecutor()
      .stream(compiled, chunkSize ?? 100, abort ? { signal: abort.signal } : undefined)
    for await (const items of rows) yield* this.transformRawResult<T[]>(items, 'all')
  }

  /** The query in MikroORM's accepted forms (text + array or named params, a raw fragment, a builder), bound. */
  #bind(query: SqlQuery, params: SqlParams): BoundQuery {
    let fragment = query instanceof NativeQueryBuilder ? query.toRaw() : query
    if (typeof fragment === 'string' && !Array.isArray(params)) fragment = raw(fragment, params)
    // A string here came with an array: a dictionary was turned into a raw fragment just above.
    const [sql, values] = isRaw(fragment) ? [fragment.sql, fragment.params] : [fragment, params as readonly unknown[]]
    return bindQuery(this.platform, this.config.get('onQuery')(sql, values), values)
  }
}

/** The Kysely transaction MikroORM's connection commits and rolls back. */
type KyselyTransaction = Parameters<SqliteConnection['commit']>[0]

/** The query forms MikroORM hands a connection, and their parameters (an array, or named in a dictionary). */
type SqlQuery = string | NativeQueryBuilder | RawQueryFragment
type SqlParams = readonly unknown[] | Dictionary<unknown>

export interface BoundQuery {
  sql: string
  values: unknown[]
}

/** MikroORM's `formatQuery` walk over `?` (value), `??` (identifier) and `\?` (a literal `?`), binding values instead. */
export function bindQuery(platform: Platform, sql: string, params: readonly unknown[]): BoundQuery {
  const values: unknown[] = []
  if (params.length === 0) return { sql, values }
  let out = ''
  let j = 0
  let pos = 0
  while (pos < sql.length) {
    const idx = sql.indexOf('?', pos)
    if (idx === -1) {
      out += sql.slice(pos)
      break
    }
    if (idx > 0 && sql[idx - 1] === '\\') {
      out += sql.slice(pos, idx - 1) + '?'
      pos = idx + 1
    } else if (sql[idx + 1] === '?') {
      out += sql.slice(pos, idx) + platform.quoteIdentifier(params[j++] as string)
      pos = idx + 2
    } else {
      out += sql.slice(pos, idx) + placeholder(platform, params[j++], values)
      pos = idx + 1
    }
  }
  return { sql: out, values }
}

function placeholder(platform: Platform, value: unknown, values: unknown[]): string {
  if (isRaw(value)) {
    const inner = bindQuery(platform, value.sql, value.params)
    values.push(...inner.values)
    return inner.sql
  }
  if (Array.isArray(value) && !(value as { [JsonProperty]?: boolean })[JsonProperty]) {
    return value.map((v) => placeholder(platform, v, values)).join(', ')
  }
  values.push(bindable(value))
  return '?'
}

/** The value better-sqlite3 binds, typed as SQLite would have read MikroORM's literal for it. */
function bindable(value: unknown): unknown {
  if (value === null || value === undefined) return null
  switch (typeof value) {
    case 'string':
    case 'bigint':
      return value
    case 'boolean':
      return value ? 1n : 0n
    case 'number':
      // A JS number binds as REAL; a literal `5` was an INTEGER, which compares differently with TEXT columns.
      return Number.isSafeInteger(value) ? BigInt(value) : value
  }
  if (value instanceof Date) return BigInt(+value)
  if (Buffer.isBuffer(value)) return value
  if (Utils.isPlainObject(value) || Array.isArray(value) || (value as { [JsonProperty]?: boolean })[JsonProperty])
    return JSON.stringify(value)
  return String(value)
}

/** MikroORM carries a query's abort options on its `loggerContext`, outside the declared type (AbstractSqlConnection.js). */
type QueryContext = LoggingOptions & { signal?: AbortSignal; inflightQueryAbortStrategy?: unknown }

function splitAbort(loggerContext: QueryContext | undefined): {
  abort?: { signal?: AbortSignal; inflightQueryAbortStrategy?: unknown }
  rest: Record<string, unknown>
} {
  if (loggerContext?.signal == null && loggerContext?.inflightQueryAbortStrategy == null)
    return { rest: loggerContext ?? {} }
  const { signal, inflightQueryAbortStrategy, ...rest } = loggerContext
  return { abort: { signal, inflightQueryAbortStrategy }, rest }
}

/**
 * Kysely's SQLite driver, made to accept a transaction SQLite has already ended. SQLite rolls a transaction back by
 * itself when a write finds the disk full (SQLITE_FULL) or fails to reach it (SQLITE_IOERR), a failed COMMIT included:
 * the ROLLBACK that follows then fails too ("cannot rollback - no transaction is active"). Kysely releases the
 * connection's lock only when COMMIT or ROLLBACK succeeds, and SQLite has one connection behind one lock: so the first
 * COMMIT on a full disk left every later ORM query waiting for ever, after space was freed too, and a stop hung
 * (disk-full.test.ts). Here ROLLBACK, and ROLLBACK TO a savepoint, run only while SQLite has a transaction open; the
 * outcome the caller asked for, nothing of the transaction kept, is already there. Holding the lock, the caller's
 * transaction is the only one the connection can have open, so `inTransaction` speaks of it.
 */
function endedByServer(driver: Driver, native: BetterSqlite3.Database): Driver {
  const rollback = driver.rollbackTransaction.bind(driver)
  driver.rollbackTransaction = async (connection) => {
    if (native.inTransaction) await rollback(connection)
  }
  const toSavepoint = driver.rollbackToSavepoint?.bind(driver)
  if (toSavepoint)
    driver.rollbackToSavepoint = async (connection, name, compile) => {
      if (native.inTransaction) await toSavepoint(connection, name, compile)
    }
  return driver
}

/** MikroORM's SQLite driver on the bound connection (`driver: BoundSqliteDriver` in the ORM options). */
export class BoundSqliteDriver extends AbstractSqlDriver<BoundSqliteConnection> {
  constructor(config: Configuration) {
    super(config, new SqlitePlatform(), BoundSqliteConnection, ['kysely', 'better-sqlite3'])
  }

  override getORMClass(): Constructor<SqliteMikroORM> {
    return SqliteMikroORM
  }
}
