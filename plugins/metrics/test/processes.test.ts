import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { chmod, copyFile, cp, link, mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { createMetricsPlugin } from '../src/index.ts'
import { startHelper } from '../../../helper/test/start-helper.ts'

const run = promisify(execFile)
const RATE_FIELDS = ['cpu', 'diskReadRate', 'diskWriteRate', 'netInRate', 'netOutRate', 'wakeupsRate'] as const
type Proc = Record<(typeof RATE_FIELDS)[number] | 'pid' | 'memory' | 'threads', number> & { name: string; user: string }

const children: ChildProcess[] = []
afterAll(() => children.forEach((c) => c.kill('SIGKILL')))

/** A child that keeps one core busy until killed. */
function busyChild(): ChildProcess {
  const child = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' })
  children.push(child)
  return child
}

describe('GET /api/activity/processes on the real process table', () => {
  let t: TestKernel
  beforeAll(async () => {
    t = await startTestKernel({ plugins: [createMetricsPlugin()] })
  })
  afterAll(() => t.close())

  it('reports zero rates on the first call, then cpu above zero for a busy process', async () => {
    const first = await t.inject({ url: '/api/activity/processes', as: 'operator' })
    expect(first.statusCode).toBe(200)
    const sample = first.json() as { sampledAt: string; processes: Proc[] }
    expect(Date.parse(sample.sampledAt)).toBeGreaterThan(0)
    const self = sample.processes.find((p) => p.pid === process.pid)
    expect(self).toBeTruthy()
    expect(self!.user).toBe('root')
    expect(self!.threads).toBeGreaterThan(0)
    expect(self!.memory).toBeGreaterThan(0)
    for (const p of sample.processes) for (const f of RATE_FIELDS) expect(p[f], `${p.name} ${f}`).toBe(0)

    const busy = busyChild()
    await new Promise((r) => setTimeout(r, 600))
    const second = (await t.inject({ url: '/api/activity/processes', as: 'operator' })).json() as { processes: Proc[] }
    const entry = second.processes.find((p) => p.pid === busy.pid)
    expect(entry, 'the busy child is listed').toBeTruthy()
    expect(entry!.cpu).toBeGreaterThan(0)
    for (const p of second.processes)
      for (const f of RATE_FIELDS) expect(p[f], `${p.name} ${f}`).toBeGreaterThanOrEqual(0)
    // Wakeups are context switches per second: this test process has some between the calls.
    expect(second.processes.some((p) => p.wakeupsRate > 0)).toBe(true)

    // And on later calls, against the previous one. A call right after another spans a few milliseconds, in which a
    // busy process on a loaded machine may earn no clock tick (10 ms each): later calls are taken until one shows it.
    const later = async () =>
      (
        (await t.inject({ url: '/api/activity/processes', as: 'operator' })).json() as { processes: Proc[] }
      ).processes.find((p) => p.pid === busy.pid)!.cpu
    await expect.poll(later).toBeGreaterThan(0)
    busy.kill('SIGKILL')
  })

  it('lists the same processes as ps', async () => {
    const before = new Set(
      ((await t.inject({ url: '/api/activity/processes', as: 'operator' })).json().processes as Proc[]).map(
        (p) => p.pid,
      ),
    )
    const { stdout } = await run('ps', ['-eo', 'pid=,comm='])
    const ps = stdout
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s+/, 2))
    // Processes that lived through both listings appear in both (short-lived ones may come and go).
    const stable = ps.filter(([pid]) => before.has(Number(pid)))
    expect(stable.length).toBeGreaterThan(ps.length * 0.8)
  })

  it('answers 423 for network=1 without the root helper, and 400 for other values; the plain call still works', async () => {
    for (const value of ['1', 'true']) {
      const res = await t.inject({ url: `/api/activity/processes?network=${value}`, as: 'operator' })
      expect(res.statusCode).toBe(423)
      expect(res.json().error).toBe('HOSTD_HELPER_UNAVAILABLE')
      expect(res.json().message).toMatch(/network/)
    }
    for (const value of ['0', 'yes', 'false', '']) {
      const res = await t.inject({ url: `/api/activity/processes?network=${value}`, as: 'operator' })
      expect(res.statusCode, `network=${value}`).toBe(400)
      expect(res.json().error).toBe('HOSTD_REQUEST_INVALID')
    }
    expect((await t.inject({ url: '/api/activity/processes', as: 'operator' })).statusCode).toBe(200)
  })
})

describe('processes the daemon may not inspect', () => {
  it('are left out when the sampler runs as an unprivileged user', async () => {
    // The same ProcessTable, run as nobody: /proc/<pid>/io of other users' processes is not readable. nobody may
    // not be able to reach this checkout (a clone under a 0700 folder), so the adapters and the runtime go to a
    // folder it can read: the runtime hard-linked (no 100 MB copy) where the file system allows.
    const dir = await mkdtemp(join(tmpdir(), 'hostd-metrics-nobody-'))
    try {
      await chmod(dir, 0o755)
      await cp(join(import.meta.dirname, '..', 'src', 'adapters'), join(dir, 'adapters'), { recursive: true })
      const node = join(dir, 'node')
      await link(process.execPath, node).catch(() => copyFile(process.execPath, node))
      const script = `import { ProcessTable } from ${JSON.stringify(join(dir, 'adapters', 'process-table.ts'))}
const s = await new ProcessTable().sweep(); console.log(JSON.stringify(s.processes.map((p) => p.pid)))`
      const { stdout } = await run(node, ['--input-type=module', '-e', script], { uid: 65534, gid: 65534, cwd: '/' })
      const pids = JSON.parse(stdout) as number[]
      expect(pids).not.toContain(1) // root's init
      expect(pids).not.toContain(process.pid) // this root-owned test process
      expect(pids.length).toBeGreaterThanOrEqual(1) // its own process is there
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

/**
 * A STAND-IN for the root helper, for one test only: it answers `net.processTraffic` with RECORDED nethogs output,
 * so the mapping of rates onto processes is deterministic (a real trace shows whatever traffic happens). The real
 * helper running the real nethogs is the test after it.
 */
async function standInHelper(
  path: string,
  answer: (args: Record<string, unknown>) => Promise<string>,
): Promise<{ server: Server; calls: unknown[] }> {
  const calls: unknown[] = []
  const server = createServer((socket) => {
    let buffer = ''
    socket.setEncoding('utf8')
    socket.on('data', async (chunk) => {
      buffer += chunk
      const nl = buffer.indexOf('\n')
      if (nl < 0) return
      const req = JSON.parse(buffer.slice(0, nl)) as { action: string; args?: Record<string, unknown> }
      if (req.action === 'ping') return void socket.end('{"ok":true}\n')
      calls.push(req)
      if (req.action !== 'net.processTraffic')
        return void socket.end(JSON.stringify({ ok: false, error: 'HOSTD_HELPER_UNKNOWN_ACTION', status: 400 }) + '\n')
      socket.end(JSON.stringify({ ok: true, result: { stdout: await answer(req.args ?? {}) } }) + '\n')
    })
  })
  await new Promise<void>((r) => server.listen(path, r))
  return { server, calls }
}

describe('network=1 through the root helper', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hostd-metrics-helper-'))
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it('asks for a trace (two refreshes: one real one-second measurement) and maps recorded nethogs rates onto the processes', async () => {
    const recorded = readFileSync(join(import.meta.dirname, 'fixtures', 'nethogs-trace.txt'), 'utf8').replaceAll(
      '/28111/',
      `/${process.pid}/`,
    )
    const socket = join(dir, 'recorded.sock')
    const helper = await standInHelper(socket, async () => recorded)
    const t = await startTestKernel({ plugins: [createMetricsPlugin()], env: { HOSTD_HELPER_SOCKET: socket } })
    try {
      const res = await t.inject({ url: '/api/activity/processes?network=1', as: 'operator' })
      expect(res.statusCode).toBe(200)
      expect(helper.calls).toEqual([{ action: 'net.processTraffic', args: { seconds: 2 } }])
      const self = (res.json().processes as Proc[]).find((p) => p.pid === process.pid)!
      expect(self.netInRate).toBe(Math.round(0.580664 * 1024))
      expect(self.netOutRate).toBe(Math.round(0.282422 * 1024))
      // Without the option, no trace and no network figures.
      const plain = await t.inject({ url: '/api/activity/processes', as: 'operator' })
      expect(helper.calls).toHaveLength(1)
      expect((plain.json().processes as Proc[]).every((p) => p.netInRate === 0 && p.netOutRate === 0)).toBe(true)
    } finally {
      await t.close()
      helper.server.close()
    }
  })

  it('runs a real nethogs trace through the real root helper and reports non-negative rates', async () => {
    const helper = await startHelper()
    const t = await startTestKernel({ plugins: [createMetricsPlugin()], env: { HOSTD_HELPER_SOCKET: helper.socket } })
    try {
      const res = await t.inject({ url: '/api/activity/processes?network=true', as: 'operator' })
      expect(res.statusCode).toBe(200)
      expect(res.json().processes.length).toBeGreaterThan(1)
      for (const p of res.json().processes as Proc[]) {
        expect(p.netInRate).toBeGreaterThanOrEqual(0)
        expect(p.netOutRate).toBeGreaterThanOrEqual(0)
      }
      // The helper ran the allowlisted trace itself (its own log), exactly once for the one request.
      const traces = (await helper.log()).filter((e) => e.action === 'net.processTraffic')
      expect(traces).toMatchObject([{ args: { seconds: 2 }, outcome: 'ok' }])
    } finally {
      await t.close()
      await helper.stop()
    }
  })
})
