/**
 * Widgets against real processes: scripts run as the unprivileged test account (test/support/unix-user.ts), in a
 * real kernel with its SQLite file, checked through /proc and the file system.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventually, startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { ensureTestAccount, type UnixAccount } from '../../../test/support/unix-user.ts'
import { createWidgetsPlugin } from '../src/index.ts'

const SECRET = `secret-marker-${process.pid}-${Date.now()}`

/** A process is gone when /proc no longer has it, or it is a zombie nobody reaped yet (it runs nothing). */
function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')
  } catch {
    return true
  }
}

/** The process group of `pid`, or null when it is gone. */
function groupOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2])
  } catch {
    return null
  }
}

/** Live processes of `uid` whose command line holds `marker`. */
function processesWith(marker: string, uid: number): number[] {
  const out: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      if (statSync(`/proc/${name}`).uid !== uid || gone(Number(name))) continue
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(marker)) out.push(Number(name))
    } catch {
      // It ended while we looked.
    }
  }
  return out
}

describe('widgets', () => {
  let t: TestKernel
  let account: UnixAccount
  let workDir: string
  let dataDir: string

  beforeAll(async () => {
    account = await ensureTestAccount()
    workDir = await mkdtemp(join(tmpdir(), 'hostd-widgets-work-'))
    t = await startTestKernel({ plugins: [createWidgetsPlugin({ user: account.name, workDir })] })
    dataDir = t.kernel.config.dataDir
  })
  afterAll(async () => {
    await t?.close()
    await rm(workDir, { recursive: true, force: true })
  })

  const create = async (body: Record<string, unknown>) => {
    const res = await t.inject({
      method: 'POST',
      url: '/api/bento/widgets',
      as: 'admin',
      payload: { type: 'text', ...body },
    })
    expect(res.statusCode, res.body).toBe(201)
    return res.json() as { id: string; script: string }
  }
  const run = async (id: string, as: 'operator' | 'admin' | 'viewer' = 'operator') =>
    t.inject({ method: 'POST', url: `/api/bento/widgets/${id}/run`, as })
  const listed = async (as: 'viewer' | 'operator' | 'admin' = 'viewer') =>
    (await t.inject({ url: '/api/bento/widgets', as })).json()

  it('runs a script as the configured account in its private folder with a minimal environment, and caches the output', async () => {
    process.env.HOSTD_TEST_DAEMON_SECRET = 'must-not-leak'
    const w = await create({
      title: 'Who',
      script:
        'id -u; id -g; pwd; env | cut -d= -f1 | sort | tr "\\n" " "; printf "\\nbell\\007 esc\\033[31m cr\\r\\n"; echo to-stderr >&2; exit 3',
    })
    const res = await run(w.id)
    expect(res.statusCode, res.body).toBe(200)
    const out = res.json().output
    const [uid, gid, cwd, envKeys, cleaned] = out.stdout.split('\n')
    expect(Number(uid)).toBe(account.uid)
    expect(Number(gid)).toBe(account.gid)
    expect(uid).not.toBe('0')
    expect(cwd).toBe(join(workDir, w.id))
    expect(
      envKeys
        .trim()
        .split(' ')
        .filter((k: string) => !['PWD', 'SHLVL', 'OLDPWD', '_'].includes(k))
        .sort(),
    ).toEqual(['HOME', 'LANG', 'PATH'])
    expect(cleaned).toBe('bell esc[31m cr')
    expect(out).toMatchObject({ stderr: 'to-stderr\n', exitCode: 3, truncated: false, timedOut: false, error: null })
    expect(Date.parse(out.ranAt)).not.toBeNaN()
    const dir = statSync(join(workDir, w.id))
    expect(dir.mode & 0o777).toBe(0o700)
    expect(dir.uid).toBe(account.uid)
    expect(statSync(workDir).mode & 0o777).toBe(0o711)

    // GET answers the stored output and never runs the script.
    const first = (await listed()).items.find((i: { id: string }) => i.id === w.id)
    const again = (await listed()).items.find((i: { id: string }) => i.id === w.id)
    expect(first.output).toEqual(out)
    expect(again.output.ranAt).toBe(out.ranAt)
  })

  it('never sends the script to a viewer or an operator, in any answer; admins get it in every answer', async () => {
    const w = await create({ title: 'Secret', type: 'stat', script: `echo 42 # ${SECRET}`, refreshSeconds: 3600 })
    expect(w.script).toContain(SECRET)
    for (const as of ['viewer', 'operator'] as const) {
      const answers = [
        await t.inject({ url: '/api/bento/widgets', as }),
        await t.inject({
          method: 'POST',
          url: '/api/bento/widgets',
          as,
          payload: { title: 'x', type: 'text', script: `echo ${SECRET}` },
        }),
        await t.inject({ method: 'POST', url: `/api/bento/widgets/${w.id}/update`, as, payload: { title: 'y' } }),
        await t.inject({ method: 'POST', url: `/api/bento/widgets/${w.id}/delete`, as }),
        await t.inject({ method: 'POST', url: '/api/bento/widgets/00000000-0000-0000-0000-000000000000/run', as }),
      ]
      if (as === 'operator') answers.push(await run(w.id, 'operator'))
      for (const res of answers) {
        expect(res.body, `${as} ${res.statusCode}`).not.toContain(SECRET)
        expect(res.body).not.toContain('"script"')
      }
      const list = answers[0]!.json()
      expect(list.items.length).toBeGreaterThan(0)
      for (const item of list.items) expect(Object.keys(item)).not.toContain('script')
      expect(answers.slice(1, 4).map((r) => r.statusCode)).toEqual([403, 403, 403])
      expect(answers[4]!.statusCode).toBe(as === 'viewer' ? 403 : 404)
    }
    const ran = (await run(w.id, 'operator')).json()
    expect(ran.output.stdout).toBe('42\n')
    expect(Object.keys(ran)).not.toContain('script')

    // Admins: list, update and run answers carry it.
    expect((await listed('admin')).items.find((i: { id: string }) => i.id === w.id).script).toContain(SECRET)
    const updated = await t.inject({
      method: 'POST',
      url: `/api/bento/widgets/${w.id}/update`,
      as: 'admin',
      payload: { title: 'Renamed', layout: { x: 1, y: 2, w: 3, h: 4 } },
    })
    expect(updated.json()).toMatchObject({
      title: 'Renamed',
      layout: { x: 1, y: 2, w: 3, h: 4 },
      script: expect.stringContaining(SECRET),
    })
    expect((await run(w.id, 'admin')).json().script).toContain(SECRET)
    // The audit records the script's size and hash, never its text.
    const audit = await t.inject({ url: '/api/audit?range=all&limit=500', as: 'admin' })
    expect(audit.body).not.toContain(SECRET)
    const created = audit
      .json()
      .items.find((e: { action: string; target: string }) => e.action === 'widget.create' && e.target === w.id)
    expect(created.detail).toMatchObject({
      scriptBytes: w.script.length,
      scriptSha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    })
  })

  it('kills a script that sleeps forever at its timeout, with the child it started (checked in /proc)', async () => {
    const w = await create({
      title: 'Forever',
      script: 'sleep 1000 & echo "shell=$$ child=$!"; sleep 1000',
      timeoutSeconds: 1,
    })
    const res = await run(w.id)
    expect(res.statusCode).toBe(200)
    const out = res.json().output
    expect(out).toMatchObject({ timedOut: true, exitCode: null, truncated: false })
    const [, shell, child] = /shell=(\d+) child=(\d+)/.exec(out.stdout)!.map(Number)
    await eventually(() => gone(shell!) && gone(child!))
    expect(processesWith('sleep 1000', account.uid)).toEqual([])
  })

  it('cuts a script printing 10 MB at 64 KiB, marks it truncated and kills it', async () => {
    const w = await create({
      title: 'Flood',
      script: "head -c 10485760 /dev/zero | tr '\\0' x; echo done-printing",
      timeoutSeconds: 60,
    })
    const out = (await run(w.id)).json().output
    expect(out.truncated).toBe(true)
    expect(out.stdout.length).toBe(64 * 1024)
    expect(out.stdout).toMatch(/^x+$/)
    expect(out.stdout).not.toContain('done-printing')
    // Killed with its group: gone once the kernel has delivered the SIGKILL (which the answer does not wait for).
    await eventually(() => processesWith('/dev/zero', account.uid).length === 0)
    const audit = (await t.inject({ url: '/api/audit?range=all&limit=500', as: 'admin' })).json().items
    const entry = audit.find((e: { action: string; target: string }) => e.action === 'widget.run' && e.target === w.id)
    expect(entry).toMatchObject({
      result: 'failure',
      detail: { trigger: 'manual', truncated: true, outputBytes: 65536 },
    })
    expect(JSON.stringify(entry)).not.toContain('xxxx')
  })

  it("cannot read the daemon's database nor write into its data dir, the work folder or /etc", async () => {
    const db = join(dataDir, 'hostd.sqlite')
    expect(statSync(db).size).toBeGreaterThan(0)
    const script = [
      `cat ${db} >/dev/null 2>&1 && echo read-db || echo no-read-db`,
      `touch ${join(dataDir, 'pwned')} 2>/dev/null && echo wrote-data || echo no-write-data`,
      `touch ${join(workDir, 'escape')} 2>/dev/null && echo wrote-work || echo no-write-work`,
      'touch /etc/hostd-widget-pwned 2>/dev/null && echo wrote-etc || echo no-write-etc',
      `ls ${workDir} >/dev/null 2>&1 && echo listed-work || echo no-list-work`,
      'echo mine > ./own-file && cat ./own-file',
    ].join('; ')
    const w = await create({ title: 'Escape', script })
    const out = (await run(w.id)).json().output
    expect(out.stdout.split('\n').filter(Boolean)).toEqual([
      'no-read-db',
      'no-write-data',
      'no-write-work',
      'no-write-etc',
      'no-list-work',
      'mine',
    ])
    expect(() => statSync(join(dataDir, 'pwned'))).toThrow()
    expect(statSync(join(workDir, w.id, 'own-file')).uid).toBe(account.uid)
  })

  it('runs a widget once at a time: a run asked for while one is going joins it', async () => {
    const w = await create({ title: 'Once', script: 'sleep 1; echo "pid $$"', refreshSeconds: 3600 })
    // Creation schedules a first run; wait for it, so the two requests below meet on a fresh one.
    await eventually(async () => (await listed()).items.find((i: { id: string }) => i.id === w.id).output)
    const [a, b] = await Promise.all([run(w.id), run(w.id)])
    expect(a.json().output).toEqual(b.json().output)
    expect(a.json().output.stdout).toMatch(/^pid \d+\n$/)
  })

  it('runs at most two scripts at once overall', async () => {
    const marker = `conc-${Date.now()}`
    const ws = await Promise.all(
      [1, 2, 3, 4].map((n) => create({ title: `C${n}`, script: `sleep 1.5 # ${marker}`, refreshSeconds: 3600 })),
    )
    let max = 0
    let polling = true
    const poller = (async () => {
      while (polling) {
        // One process group per run (a forked child shows the shell's command line until it execs, so count groups).
        max = Math.max(
          max,
          new Set(
            processesWith(marker, account.uid)
              .map(groupOf)
              .filter((g) => g !== null),
          ).size,
        )
        await new Promise((r) => setTimeout(r, 20))
      }
    })()
    const answers = await Promise.all(ws.map((w) => run(w.id)))
    polling = false
    await poller
    for (const res of answers) expect(res.json().output).toMatchObject({ exitCode: 0, timedOut: false })
    expect(max).toBe(2)
  })

  it('refuses bad widgets with 400 and unknown ids with 404', async () => {
    const bad = [
      { title: 'x', type: 'text', script: 'true', refreshSeconds: 9 },
      { title: 'x', type: 'text', script: 'true', refreshSeconds: 86_401 },
      { title: 'x', type: 'text', script: 'true', timeoutSeconds: 121 },
      { title: 'x', type: 'chart', script: 'true' },
      { title: '', type: 'text', script: 'true' },
      { title: 'x', type: 'text', script: 'x'.repeat(16 * 1024 + 1) },
      { title: 'x', type: 'text', script: 'true', shell: '/bin/bash' },
    ]
    for (const payload of bad) {
      const res = await t.inject({ method: 'POST', url: '/api/bento/widgets', as: 'admin', payload })
      expect(res.statusCode, JSON.stringify(payload).slice(0, 80)).toBe(400)
    }
    const missing = '00000000-0000-0000-0000-000000000000'
    for (const path of ['update', 'delete', 'run']) {
      const res = await t.inject({
        method: 'POST',
        url: `/api/bento/widgets/${missing}/${path}`,
        as: 'admin',
        payload: path === 'update' ? { title: 'z' } : undefined,
      })
      expect(res.statusCode, path).toBe(404)
      expect(res.json().error).toBe('HOSTD_WIDGETS_NOT_FOUND')
    }
  })

  it('keeps widgets and their output across a reload of the plugin, and deletes them with their folder', async () => {
    const w = await create({ title: 'Keep', script: 'echo kept', refreshSeconds: 3600 })
    const before = (await run(w.id)).json().output
    await t.kernel.registry.disable('widgets')
    await t.kernel.registry.enable('widgets')
    const after = (await listed()).items.find((i: { id: string }) => i.id === w.id)
    expect(after.output).toEqual(before)
    const del = await t.inject({ method: 'POST', url: `/api/bento/widgets/${w.id}/delete`, as: 'admin' })
    expect(del.statusCode).toBe(204)
    expect((await listed()).items.some((i: { id: string }) => i.id === w.id)).toBe(false)
    expect(() => statSync(join(workDir, w.id))).toThrow()
  })
})

describe('widgets without an account', () => {
  it('lists and edits widgets but refuses runs with the reason', async () => {
    const t = await startTestKernel({
      plugins: [createWidgetsPlugin({ user: undefined, workDir: join(tmpdir(), 'hostd-widgets-unused') })],
    })
    try {
      const list = await t.inject({ url: '/api/bento/widgets', as: 'viewer' })
      expect(list.statusCode).toBe(200)
      expect(list.json()).toEqual({
        items: [],
        runner: { available: false, reason: expect.stringContaining('HOSTD_WIDGETS_USER') },
      })
      const w = await t.inject({
        method: 'POST',
        url: '/api/bento/widgets',
        as: 'admin',
        payload: { title: 'x', type: 'text', script: 'echo hi' },
      })
      expect(w.statusCode).toBe(201)
      const res = await t.inject({ method: 'POST', url: `/api/bento/widgets/${w.json().id}/run`, as: 'operator' })
      expect(res.statusCode).toBe(503)
      expect(res.json()).toMatchObject({
        error: 'HOSTD_WIDGETS_RUNNER_UNAVAILABLE',
        message: expect.stringContaining('HOSTD_WIDGETS_USER'),
      })
      expect((await t.inject({ url: '/api/bento/widgets', as: 'viewer' })).json().items[0].output).toBeNull()
    } finally {
      await t.close()
    }
  })

  it("refuses root and the daemon's own account", async () => {
    const t = await startTestKernel({
      plugins: [createWidgetsPlugin({ user: 'root', workDir: join(tmpdir(), 'hostd-widgets-unused') })],
    })
    try {
      const runner = (await t.inject({ url: '/api/bento/widgets', as: 'viewer' })).json().runner
      expect(runner).toEqual({ available: false, reason: expect.stringContaining('never run as root') })
    } finally {
      await t.close()
    }
  })
})
