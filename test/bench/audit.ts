/**
 * The audit bench (`BENCH_ONLY=audit npm run bench`): the audit log with 1,000,000 records, any page under 50 ms
 * (issue 29). The daemon (its build, the kernel alone) makes its data dir and first admin, stops; the records are
 * written straight into its database in one transaction through one prepared statement (spread over the last 300
 * days, oldest first, like a log that grew), the retention set to keep them all; the daemon starts again on it. Then
 * curl (one process per round, its connection reused) asks `GET /api/audit` for pages by key (first, middle, last,
 * newer-than, the last page of the 30-day range) and, for comparison, by offset; each page's time is curl's
 * time_total minus time_pretransfer (the answer alone: no TLS handshake), the median of 5 rounds.
 */
import Database from 'better-sqlite3'
import { execFile } from 'node:child_process'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { startDaemon } from '../support/daemon.ts'
import { figure, median, printBenchJson, round, runBench, table, tempDir, track, type Figure } from './support.ts'

const RECORDS = Number(process.env.BENCH_AUDIT_RECORDS ?? 1_000_000)
const ROUNDS = 5
const DAY = 24 * 3600_000
const PASSWORD = 'correct horse battery'
const run = promisify(execFile)

await runBench(
  'audit',
  async () => {
    const dataDir = tempDir('hostd-audit-bench-')
    const env = { HOSTD_BUILTIN_PLUGINS: '0', HOSTD_LOG_LEVEL: 'warn' }
    let daemon = await startDaemon({ dataDir, env, startTimeoutMs: 30_000 })
    track(daemon.process)
    const json = { 'content-type': 'application/json' }
    const admin = { username: 'admin', password: PASSWORD }
    if (
      (await daemon.fetch('/api/setup', { method: 'POST', headers: json, body: JSON.stringify(admin) })).status !== 201
    )
      throw new Error('setup failed')
    const login = await daemon.fetch('/api/auth/login', {
      method: 'POST',
      headers: { ...json, 'x-svc-client': 'bench' },
      body: JSON.stringify(admin),
    })
    const { token } = (await login.json()) as { token: string }
    await daemon.stop({ keepDataDir: true })

    // The records, fast: one transaction, one prepared statement.
    const file = join(dataDir, 'hostd.sqlite')
    const db = new Database(file)
    db.prepare("insert or replace into settings (scope, key, value) values ('kernel', 'audit.retention', ?)").run(
      JSON.stringify({ maxAgeDays: 3650, maxRows: 10_000_000 }),
    )
    const insert = db.prepare(
      'insert into audit (time, user_id, username, ip, action, target, result, detail) values (?, ?, ?, ?, ?, ?, ?, ?)',
    )
    const start = Date.now() - 300 * DAY
    const t0 = performance.now()
    let firstId = 0
    db.transaction(() => {
      for (let i = 0; i < RECORDS; i++) {
        const { lastInsertRowid } = insert.run(
          start + Math.floor((i * 300 * DAY) / RECORDS),
          'u1',
          'admin',
          '192.0.2.10',
          i % 7 ? 'container.start' : 'user.create',
          `web-${i % 500}`,
          i % 20 ? 'success' : 'failure',
          i % 3 ? null : JSON.stringify({ image: 'nginx:1.27', count: 1 }),
        )
        if (i === 0) firstId = Number(lastInsertRowid)
      }
    })()
    const fillMs = performance.now() - t0
    const first30d = db
      .prepare('select min(id) from audit where time >= ?')
      .pluck()
      .get(Date.now() - 30 * DAY) as number
    db.close()
    const sizeMiB = statSync(file).size / 1024 / 1024
    console.log(`${RECORDS.toLocaleString()} records written in ${Math.round(fillMs)} ms (${round(sizeMiB)} MiB)`)

    const t1 = performance.now()
    daemon = await startDaemon({ dataDir, env, startTimeoutMs: 60_000 })
    track(daemon.process)
    const restartMs = performance.now() - t1

    const mid = firstId + Math.floor(RECORDS / 2)
    const pages: [string, string, boolean][] = [
      ['first page (all)', 'range=all&limit=50', true],
      ['first page (7 days)', 'range=7d&limit=50', true],
      ['by key: the middle', `range=all&limit=50&before=${mid}`, true],
      ['by key: the last page', `range=all&limit=50&before=${firstId + 50}`, true],
      ['by key: newer than the middle', `range=all&limit=50&after=${mid}`, true],
      ['by key: the last page of 30 days', `range=30d&limit=50&before=${first30d + 50}`, true],
      ['by offset: the middle (no goal)', `range=all&limit=50&offset=${Math.floor(RECORDS / 2)}`, false],
      ['by offset: the last page (no goal)', `range=all&limit=50&offset=${RECORDS - 50}`, false],
    ]
    const times = pages.map(() => [] as number[])
    for (let r = 0; r < ROUNDS; r++) {
      const args = [
        '-sk',
        '-H',
        `authorization: Bearer ${token}`,
        '-w',
        '%{http_code} %{time_pretransfer} %{time_total}\\n',
      ]
      for (const [, query] of pages) args.push('-o', '/dev/null', `${daemon.url}/api/audit?${query}`)
      const { stdout } = await run('curl', args)
      stdout
        .trim()
        .split('\n')
        .forEach((line, i) => {
          const [code, pre, total] = line.split(' ')
          if (code !== '200') throw new Error(`${pages[i]![1]} answered ${code}`)
          times[i]!.push((Number(total) - Number(pre)) * 1000)
        })
    }
    // One answer checked for what it holds: the last page by key is the oldest 50 records.
    const last = (await (
      await daemon.fetch(`/api/audit?range=all&limit=50&before=${firstId + 50}`, {
        headers: { authorization: `Bearer ${token}` },
      })
    ).json()) as { items: { id: number }[]; total: number }
    if (last.items.length !== 50 || last.items.at(-1)!.id !== firstId || last.total < RECORDS)
      throw new Error(`the last page is wrong: ${last.items.length} items, total ${last.total}`)

    const medians = times.map(median)
    console.log(
      table(
        pages.map(([name], i) => [
          name,
          round(medians[i]!, 2),
          round(Math.min(...times[i]!), 2),
          round(Math.max(...times[i]!), 2),
        ]),
        ['page of 50 (GET /api/audit)', 'median ms', 'min', 'max'],
      ),
    )
    const keyed = pages.map((p, i) => (p[2] ? medians[i]! : 0))
    const slowest = Math.max(...keyed)
    const worst = Math.max(...times.flatMap((t, i) => (pages[i]![2] ? t : [])))
    const figures: Figure[] = [
      figure(
        `audit log, ${RECORDS.toLocaleString()} records: slowest page (median of ${ROUNDS})`,
        slowest,
        'ms',
        { op: '<', target: 50 },
        `${pages[keyed.indexOf(slowest)]![0]}; the slowest single answer by key ${round(worst, 1)} ms; ` +
          `by offset, the last page takes ${round(medians.at(-1)!, 1)} ms`,
      ),
      figure(`audit log: ${RECORDS.toLocaleString()} records written (one transaction)`, fillMs / 1000, 's'),
      figure('audit log: daemon start on them', restartMs, 'ms'),
    ]
    printBenchJson('audit', figures, { records: RECORDS, sizeMiB: round(sizeMiB), medians })
  },
  10 * 60_000,
)
