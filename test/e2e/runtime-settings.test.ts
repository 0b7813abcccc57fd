/**
 * The runtime settings (kernel/src/runtime.ts) on the real daemon: it restarts itself in place with the allocator
 * variable and V8's flag, so /proc shows them on the daemon's own pid, and a value the user gave is kept.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { readdir, readFile } from 'node:fs/promises'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { join } from 'node:path'
import { startDaemon, type Daemon } from '../support/daemon.ts'
import { REPO_ROOT } from '../../kernel/src/kernel.ts'

const started: Daemon[] = []
afterEach(async () => {
  await Promise.all(started.splice(0).map((d) => d.stop()))
})

async function procOf(pid: number): Promise<{ env: string[]; argv: string[] }> {
  const split = (raw: string) => raw.split('\0').filter(Boolean)
  return {
    env: split(await readFile(`/proc/${pid}/environ`, 'utf8')),
    argv: split(await readFile(`/proc/${pid}/cmdline`, 'utf8')),
  }
}

describe.runIf(process.platform === 'linux')('runtime settings', () => {
  it('the daemon started without them runs with them, on the pid it was started as', async () => {
    const d = await startDaemon()
    started.push(d)
    expect((await d.fetch('/health')).status).toBe(200)
    const { env, argv } = await procOf(d.pid)
    expect(env).toContain('MALLOC_MMAP_THRESHOLD_=131072')
    expect(env).toContain('MALLOC_ARENA_MAX=2')
    expect(argv).toContain('--max-semi-space-size=2')
    expect(argv).toContain('--no-allocation-site-pretenuring')
    expect(argv.at(-1)).toMatch(/main\.(ts|mjs)$/)
  })

  it('keeps the values the user gave', async () => {
    const d = await startDaemon({ env: { MALLOC_MMAP_THRESHOLD_: '65536', NODE_OPTIONS: '--max-semi-space-size=8' } })
    started.push(d)
    const { env, argv } = await procOf(d.pid)
    expect(env).toContain('MALLOC_MMAP_THRESHOLD_=65536')
    expect(env).not.toContain('MALLOC_MMAP_THRESHOLD_=131072')
    expect(argv.some((a) => a.startsWith('--max-semi-space-size'))).toBe(false)
  })
})

describe('what the daemon loads', () => {
  it("leaves Node's bundled undici unloaded: the kernel and every built-in plugin import node:http without its ES module facade", async () => {
    const plugins = join(REPO_ROOT, 'plugins')
    const entries: string[] = [join(REPO_ROOT, 'kernel/src/kernel.ts')]
    for (const dir of await readdir(plugins)) {
      const pkg = JSON.parse(await readFile(join(plugins, dir, 'package.json'), 'utf8').catch(() => 'null'))
      if (pkg) entries.push(join(plugins, dir, pkg.hostd?.entry ?? pkg.main))
    }
    const script = `for (const e of ${JSON.stringify(entries)}) await import(e)
process.stdout.write(JSON.stringify(process.moduleLoadList.filter((m) => m.includes('undici'))))`
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      cwd: REPO_ROOT,
    })
    expect(entries.length).toBeGreaterThan(10)
    expect(JSON.parse(stdout)).toEqual([])
  })
})
