/**
 * Widgets benchmark (`npm run bench`, or BENCH_ONLY=widgets): GET /api/bento/widgets with 20 widgets holding
 * cached output, idle and while two scripts are running (the global limit), against GET /api/version in the same
 * kernel. The point: GET answers from the cache, so running scripts do not slow it. Needs root (scripts run as
 * the test account). Ratios, not times.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestKernel } from '@hostd/sdk/testing'
import { ensureTestAccount } from '../../../test/support/unix-user.ts'
import { createWidgetsPlugin } from '../src/index.ts'

async function rate(label: string, n: number, once: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(100, n); i++) await once()
  const start = process.hrtime.bigint()
  for (let i = 0; i < n; i++) await once()
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  console.log(`${label.padEnd(48)} ${(n / seconds).toFixed(0).padStart(8)} /s`)
  return n / seconds
}

const account = await ensureTestAccount()
const workDir = await mkdtemp(join(tmpdir(), 'hostd-widgets-bench-'))
const t = await startTestKernel({ plugins: [createWidgetsPlugin({ user: account.name, workDir })] })
try {
  const ids: string[] = []
  for (let i = 0; i < 20; i++) {
    const w = await t.inject({
      method: 'POST',
      url: '/api/bento/widgets',
      as: 'admin',
      payload: { title: `W${i}`, type: 'list', script: 'seq 1 2000', refreshSeconds: 86400 },
    })
    ids.push(w.json().id)
  }
  for (const id of ids) await t.inject({ method: 'POST', url: `/api/bento/widgets/${id}/run`, as: 'operator' })
  const get = (path: string) => async () => {
    const res = await t.inject({ url: path, as: 'viewer' })
    if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode}`)
  }
  const version = await rate('reference: GET /api/version', 2000, get('/api/version'))
  const idle = await rate('GET /api/bento/widgets (20 × 8.9 KB output)', 500, get('/api/bento/widgets'))
  const slow = await Promise.all(
    ids.slice(0, 2).map((id) =>
      t.inject({
        method: 'POST',
        url: `/api/bento/widgets/${id}/update`,
        as: 'admin',
        payload: { script: 'sleep 30', timeoutSeconds: 60 },
      }),
    ),
  )
  const running = slow.map((r) =>
    t.inject({ method: 'POST', url: `/api/bento/widgets/${r.json().id}/run`, as: 'operator' }),
  )
  const busy = await rate('same, while two scripts sleep', 500, get('/api/bento/widgets'))
  const result = {
    versionPerSecond: Math.round(version),
    widgetsPerSecond: Math.round(idle),
    widgetsBusyPerSecond: Math.round(busy),
    widgetsRatio: +(idle / version).toFixed(3),
    busyRatio: +(busy / idle).toFixed(3),
  }
  console.log(`\nwidgets/version ${result.widgetsRatio}; busy/idle ${result.busyRatio}`)
  console.log(`BENCH_JSON ${JSON.stringify(result)}`)
  await t.close() // stops the plugin: the sleeping scripts are killed
  await Promise.allSettled(running)
} finally {
  await t.close().catch(() => undefined)
  await rm(workDir, { recursive: true, force: true })
}
