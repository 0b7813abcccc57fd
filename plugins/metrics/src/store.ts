import type { Database } from '@hostd/sdk'
import { COARSE_STEP_S, FINE_STEP_S, type StoredPoint } from './history.ts'

/**
 * Persists history in the daemon's SQLite database (the `database` token), in a table this plugin creates
 * itself: `metrics_history`, one row per point, keyed by step (2 or 60 seconds) and time.
 * Plain SQL rather than a MikroORM entity: the rows are numbers written in batches and read back once at
 * start, and a table created with IF NOT EXISTS survives hot reloads of the plugin without re-registering
 * an entity class under the same name.
 */
const COLUMNS = [
  'cpu',
  'iowait',
  'load1',
  'memUsedBytes',
  'memTotalBytes',
  'swapUsedBytes',
  'diskReadBytesPerSec',
  'diskWriteBytesPerSec',
  'netRxBytesPerSec',
  'netTxBytesPerSec',
  'maxTempCelsius',
] as const
const TABLE = 'metrics_history'
const ROWS_PER_INSERT = 500
const HOUR_MS = 3_600_000

type Row = Record<(typeof COLUMNS)[number], number | null> & { step: number; ms: number }

export class HistoryStore {
  readonly #db: Database

  constructor(db: Database) {
    this.#db = db
  }

  #execute<T>(sql: string, params: unknown[] = [], method: 'all' | 'run' = 'run'): Promise<T> {
    return this.#db.em().getConnection().execute(sql, params, method) as Promise<T>
  }

  async init(): Promise<void> {
    await this.#execute(
      `CREATE TABLE IF NOT EXISTS ${TABLE} (step INTEGER NOT NULL, ms INTEGER NOT NULL, ` +
        `${COLUMNS.map((c) => `"${c}" REAL`).join(', ')}, PRIMARY KEY (step, ms)) WITHOUT ROWID`,
    )
  }

  /** The kept points, oldest first: the last hour of 2 s points and the last 7 days of minute points. */
  async load(now = Date.now()): Promise<{ fine: StoredPoint[]; coarse: StoredPoint[] }> {
    const read = async (step: number, since: number) => {
      const rows = await this.#execute<Row[]>(
        `SELECT * FROM ${TABLE} WHERE step = ? AND ms > ? ORDER BY ms`,
        [step, since],
        'all',
      )
      return rows.map(fromRow)
    }
    return { fine: await read(FINE_STEP_S, now - HOUR_MS), coarse: await read(COARSE_STEP_S, now - 7 * 24 * HOUR_MS) }
  }

  /** Writes new points and drops the ones past their retention, in one transaction. */
  async save(items: { step: number; point: StoredPoint }[], now = Date.now()): Promise<void> {
    const conn = this.#db.em().getConnection()
    await conn.transactional(async (trx) => {
      for (let i = 0; i < items.length; i += ROWS_PER_INSERT) {
        const chunk = items.slice(i, i + ROWS_PER_INSERT)
        const placeholders = chunk.map(() => `(${['?', '?', ...COLUMNS.map(() => '?')].join(', ')})`).join(', ')
        const params = chunk.flatMap(({ step, point }) => [step, point.ms, ...COLUMNS.map((c) => point[c])])
        await conn.execute(
          `INSERT OR REPLACE INTO ${TABLE} (step, ms, ${COLUMNS.map((c) => `"${c}"`).join(', ')}) VALUES ${placeholders}`,
          params,
          'run',
          trx,
        )
      }
      await conn.execute(
        `DELETE FROM ${TABLE} WHERE (step = ? AND ms <= ?) OR (step = ? AND ms <= ?)`,
        [FINE_STEP_S, now - HOUR_MS, COARSE_STEP_S, now - 7 * 24 * HOUR_MS],
        'run',
        trx,
      )
    })
  }
}

function fromRow(r: Row): StoredPoint {
  return {
    ms: r.ms,
    cpu: r.cpu ?? 0,
    iowait: r.iowait ?? 0,
    load1: r.load1 ?? 0,
    memUsedBytes: r.memUsedBytes ?? 0,
    memTotalBytes: r.memTotalBytes ?? 0,
    swapUsedBytes: r.swapUsedBytes ?? 0,
    diskReadBytesPerSec: r.diskReadBytesPerSec ?? 0,
    diskWriteBytesPerSec: r.diskWriteBytesPerSec ?? 0,
    netRxBytesPerSec: r.netRxBytesPerSec ?? 0,
    netTxBytesPerSec: r.netTxBytesPerSec ?? 0,
    maxTempCelsius: r.maxTempCelsius,
  }
}
