/**
 * Floods against the real daemon (its own process, so its memory is its own): 50 MB of output arrives whole, a
 * client that stops reading leaves the daemon holding a bounded backlog, and Ctrl-C then reaches the shell.
 * The figures are printed (resident memory from /proc/<pid>/status); the one memory bound asserted is generous.
 * Measured here: the first flood after start raises the daemon's RSS by about 60 MiB once (V8's heap and the
 * allocator growing to the traffic), later floods of 50 or 200 MB by under 10 MiB; a stalled client adds ~0.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import { ensureTestAccount } from '../../../test/support/unix-user.ts'
import { startPluginDaemon, type PluginDaemon } from '../../../test/support/plugin-daemon.ts'
import { TerminalClient, until } from './support.ts'

const MiB = 1024 * 1024
/** "RSS 80.1 MiB before, peak 92.3 MiB (+12.2 MiB)" */
const rssGrowth = (before: number, peak: number) =>
  `RSS ${(before / MiB).toFixed(1)} MiB before, peak ${(peak / MiB).toFixed(1)} MiB (+${((peak - before) / MiB).toFixed(1)} MiB)`

async function memory(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)![1]) * 1024
  return { rss: kib('VmRSS'), peak: kib('VmHWM') }
}

/** utime + stime of a process, in clock ticks. */
async function cpuTicks(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'latin1')).split(') ')[1]!.split(' ')
  return Number(fields[11]) + Number(fields[12])
}

/** The pid of the program named `comm` in the terminal session `sid`. */
async function programIn(sid: number, comm: string): Promise<number> {
  for (;;) {
    for (const name of await readdir('/proc')) {
      if (!/^\d+$/.test(name)) continue
      const stat = await readFile(`/proc/${name}/stat`, 'latin1').catch(() => '')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (stat.includes(`(${comm})`) && Number(fields[3]) === sid) return Number(name)
    }
    await sleep(50)
  }
}

/** Resets the process's peak resident size (VmHWM) to its current size. */
const resetPeak = (pid: number) => writeFile(`/proc/${pid}/clear_refs`, '5')

describe('terminal floods, against the real daemon', () => {
  let d: PluginDaemon
  beforeAll(async () => {
    const account = await ensureTestAccount()
    d = await startPluginDaemon(['terminal'], { HOSTD_TERMINAL_USER: account.name })
  })
  afterAll(() => d?.stop())

  const open = async () => {
    const c = new TerminalClient(`${d.url.replace(/^https/, 'wss')}/api/terminal`, {
      token: d.adminToken,
      keep: 64 * 1024,
    })
    await c.waitForFrame('ready')
    await c.run('true')
    return c
  }

  it("delivers 50 MB of output whole, with the daemon's resident memory growing little", async () => {
    const c = await open()
    const before = await memory(d.pid)
    await resetPeak(d.pid)
    const start = c.bytes
    c.type('yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 50000000; echo FLOOD-$((1+1))\n')
    await c.waitFor(/FLOOD-2\r\n/)
    const after = await memory(d.pid)
    const received = c.bytes - start
    console.log(
      `terminal 50 MB flood: ${(received / 1e6).toFixed(1)} MB received; daemon ${rssGrowth(before.rss, after.peak)}`,
    )
    expect(received).toBeGreaterThanOrEqual(50_000_000)
    await c.close()
  })

  it('stops the program while a client does not read (the daemon holding a bounded backlog), and Ctrl-C then ends it', async () => {
    const c = await open()
    const before = await memory(d.pid)
    await resetPeak(d.pid)
    c.type('yes 0123456789abcdefghijklmnopqrstuvwxyz\n')
    await until(() => c.bytes > 2_000_000)
    const yes = await programIn(c.frames.find((f) => f.type === 'ready').pid, 'yes')
    // The client stops reading. The daemon's backlog passes the high watermark, it stops reading the PTY, and `yes`
    // blocks on its next write: its CPU time stops growing. Without flow control it would run on, piling its
    // output into the daemon's memory.
    c.ws.pause()
    await sleep(1500)
    const cpuBefore = await cpuTicks(yes)
    await sleep(1000)
    const cpuAfter = await cpuTicks(yes)
    const stalled = await memory(d.pid)
    console.log(
      `terminal stalled client: \`yes\` used ${cpuAfter - cpuBefore} CPU ticks in 1 s; ` +
        `daemon ${rssGrowth(before.rss, stalled.peak)}`,
    )
    expect(cpuAfter - cpuBefore).toBeLessThanOrEqual(5)
    expect(stalled.peak - before.rss).toBeLessThan(64 * MiB)
    c.ws.resume()
    c.type('\x03')
    c.type('echo CTRLC-$((40+2))\n')
    await c.waitFor(/CTRLC-42\r\n/)
    await c.close()
  })
})
