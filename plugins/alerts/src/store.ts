/**
 * The plugin's tables in the daemon's SQLite database, plain SQL (as plugins/metrics/src/store.ts: tables made with
 * IF NOT EXISTS survive hot reloads). Rules, channels, silences and alert states are small JSON documents keyed by
 * id; history and deliveries are rows with a few columns to query by.
 */
import type { Database } from '@hostd/sdk'

type Kind = 'rules' | 'channels' | 'silences' | 'states'
const DOC_TABLES: Record<Kind, string> = {
  rules: 'alerts_rules',
  channels: 'alerts_channels',
  silences: 'alerts_silences',
  states: 'alerts_states',
}
const HISTORY = 'alerts_history'
const DELIVERIES = 'alerts_deliveries'
/** Rows kept: the newest this many history items and finished deliveries. */
const KEEP_HISTORY = 2000
const KEEP_DELIVERIES = 1000

export interface HistoryRow {
  id: number
  ruleId: string
  ruleName: string
  target: string
  severity: 'info' | 'warning' | 'critical'
  summary: string
  value: number | null
  startsAt: string
  endsAt: string | null
}

export interface DeliveryRow {
  id: number
  channelId: string
  kind: 'firing' | 'resolved' | 'test'
  summary: string
  /** The notification (JSON) the channel formats. */
  payload: string
  status: 'pending' | 'sent' | 'failed'
  attempts: number
  lastError: string | null
  nextAttemptAt: string | null
  createdAt: string
  sentAt: string | null
}

export class AlertStore {
  readonly #db: Database

  constructor(db: Database) {
    this.#db = db
  }

  #run<T>(sql: string, params: unknown[] = [], method: 'all' | 'run' = 'run'): Promise<T> {
    return this.#db.em().getConnection().execute(sql, params, method) as Promise<T>
  }

  async init(): Promise<void> {
    for (const table of Object.values(DOC_TABLES))
      await this.#run(`CREATE TABLE IF NOT EXISTS ${table} (id TEXT PRIMARY KEY, doc TEXT NOT NULL)`)
    await this.#run(
      `CREATE TABLE IF NOT EXISTS ${HISTORY} (id INTEGER PRIMARY KEY AUTOINCREMENT, ruleId TEXT NOT NULL, ` +
        'ruleName TEXT NOT NULL, target TEXT NOT NULL, severity TEXT NOT NULL, summary TEXT NOT NULL, value REAL, ' +
        'startsAt TEXT NOT NULL, endsAt TEXT)',
    )
    await this.#run(
      `CREATE TABLE IF NOT EXISTS ${DELIVERIES} (id INTEGER PRIMARY KEY AUTOINCREMENT, channelId TEXT NOT NULL, ` +
        'kind TEXT NOT NULL, summary TEXT NOT NULL, payload TEXT NOT NULL, status TEXT NOT NULL, ' +
        'attempts INTEGER NOT NULL, lastError TEXT, nextAttemptAt TEXT, createdAt TEXT NOT NULL, sentAt TEXT)',
    )
  }

  async all<T>(kind: Kind): Promise<T[]> {
    const rows = await this.#run<{ doc: string }[]>(`SELECT doc FROM ${DOC_TABLES[kind]} ORDER BY rowid`, [], 'all')
    return rows.map((r) => JSON.parse(r.doc) as T)
  }

  async put(kind: Kind, id: string, doc: unknown): Promise<void> {
    await this.#run(
      `INSERT INTO ${DOC_TABLES[kind]} (id, doc) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET doc = excluded.doc`,
      [id, JSON.stringify(doc)],
    )
  }

  async delete(kind: Kind, id: string): Promise<void> {
    await this.#run(`DELETE FROM ${DOC_TABLES[kind]} WHERE id = ?`, [id])
  }

  async addHistory(row: Omit<HistoryRow, 'id'>): Promise<number> {
    const res = await this.#run<{ insertId: number }>(
      `INSERT INTO ${HISTORY} (ruleId, ruleName, target, severity, summary, value, startsAt, endsAt) ` +
        'VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [row.ruleId, row.ruleName, row.target, row.severity, row.summary, row.value, row.startsAt, row.endsAt],
    )
    await this.#run(`DELETE FROM ${HISTORY} WHERE id <= ?`, [res.insertId - KEEP_HISTORY])
    return res.insertId
  }

  async endHistory(id: number, endsAt: string): Promise<void> {
    await this.#run(`UPDATE ${HISTORY} SET endsAt = ? WHERE id = ?`, [endsAt, id])
  }

  history(limit: number): Promise<HistoryRow[]> {
    return this.#run(`SELECT * FROM ${HISTORY} ORDER BY id DESC LIMIT ?`, [limit], 'all')
  }

  async addDelivery(row: Omit<DeliveryRow, 'id'>): Promise<number> {
    const res = await this.#run<{ insertId: number }>(
      `INSERT INTO ${DELIVERIES} (channelId, kind, summary, payload, status, attempts, lastError, nextAttemptAt, ` +
        'createdAt, sentAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      [
        row.channelId,
        row.kind,
        row.summary,
        row.payload,
        row.status,
        row.attempts,
        row.lastError,
        row.nextAttemptAt,
        row.createdAt,
        row.sentAt,
      ],
    )
    await this.#run(`DELETE FROM ${DELIVERIES} WHERE id <= ? AND status != 'pending'`, [res.insertId - KEEP_DELIVERIES])
    return res.insertId
  }

  async updateDelivery(row: DeliveryRow): Promise<void> {
    await this.#run(
      `UPDATE ${DELIVERIES} SET status = ?, attempts = ?, lastError = ?, nextAttemptAt = ?, sentAt = ? WHERE id = ?`,
      [row.status, row.attempts, row.lastError, row.nextAttemptAt, row.sentAt, row.id],
    )
  }

  pendingDeliveries(): Promise<DeliveryRow[]> {
    return this.#run(`SELECT * FROM ${DELIVERIES} WHERE status = 'pending' ORDER BY id`, [], 'all')
  }

  deliveries(limit: number, channelId?: string): Promise<DeliveryRow[]> {
    return channelId
      ? this.#run(`SELECT * FROM ${DELIVERIES} WHERE channelId = ? ORDER BY id DESC LIMIT ?`, [channelId, limit], 'all')
      : this.#run(`SELECT * FROM ${DELIVERIES} ORDER BY id DESC LIMIT ?`, [limit], 'all')
  }

  async dropChannelDeliveries(channelId: string): Promise<void> {
    await this.#run(
      `UPDATE ${DELIVERIES} SET status = 'failed', nextAttemptAt = NULL WHERE channelId = ? AND status = 'pending'`,
      [channelId],
    )
  }
}
