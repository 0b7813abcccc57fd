import { execFile, spawn } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { startHelper, type RunningHelper } from '../../../helper/test/start-helper.ts'
import { createAptRoot, machineDpkgStatusHash as machineStatus, type AptRoot } from '../../../test/support/apt-root.ts'
import { openSocket } from '@hostd/sdk/testing'
import { definePlugin, tokens, type OptionalServices } from '@hostd/sdk'
import { translateApt } from '../src/apt-errors.ts'
import { createPackagesPlugin, packageUpdates } from '../src/index.ts'

/** A built-in plugin reading the provided `packages.updates` (as the alerts plugin's updates rule does). */
const reader = definePlugin({
  id: 'updates-reader',
  version: '1.0.0',
  kernel: '^1.3.0',
  deps: { optional: tokens.optional },
  setup: ({ optional }) => optional,
})

/**
 * The packages plugin against a real apt and dpkg: a local repository and an isolated dpkg root
 * (test/support/apt-root.ts), reached by the real root helper through its HOSTD_HELPER_APT_CONFIG setting and by the
 * plugin's own reads through its admindir and APT_CONFIG options. Every check of the package state reads
 * dpkg-query directly; the machine's own dpkg database is checksummed before and after.
 */

async function until<T>(what: string, probe: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const value = await probe()
    if (ok(value)) return value
    if (attempt > 600) throw new Error(`${what}: still ${JSON.stringify(value)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

describe('packages plugin (real apt and dpkg on an isolated root, real helper)', () => {
  let statusBefore: string
  let apt: AptRoot
  let helper: RunningHelper
  let t: TestKernel
  let admin: { token: string; username: string }

  /** Runs one job over the socket to its end: every message and how the socket closed. */
  async function job(request: unknown, token = admin.token) {
    const session = openSocket(t, '/api/packages/exec', token, request)
    const closed = await session.closed
    return { messages: session.messages, closed, result: session.messages.find((m) => m.type === 'result') }
  }
  const list = async () => {
    const res = await t.inject({ url: '/api/packages', as: 'viewer' })
    expect(res.statusCode, res.body).toBe(200)
    return res.json() as {
      items: any[]
      total: number
      upgradableCount: number
      upgradesCheckedAt: string | null
      job: unknown
    }
  }
  const find = async (name: string) => (await list()).items.find((p) => p.name === name)
  const search = async (q: string) => {
    const res = await t.inject({ url: `/api/packages/search?q=${encodeURIComponent(q)}`, as: 'viewer' })
    expect(res.statusCode, res.body).toBe(200)
    return res.json() as { query: string; total: number; truncated: boolean; items: any[] }
  }
  const audit = async () =>
    (await t.inject({ url: '/api/audit?range=all&limit=500', as: 'admin' })).json().items as any[]

  beforeAll(async () => {
    statusBefore = machineStatus()
    apt = await createAptRoot()
    await apt.publish(
      { name: 'hostd-demo', version: '1.0', summary: 'Demo package for hostd tests' },
      { name: 'hostd-demo-extras', version: '1.0', summary: 'Extras for the demo' },
      { name: 'hostd-tools', version: '2.0', summary: 'Tools that mention hostd-demo in their summary' },
      { name: 'hostd-slow', version: '1.0', summary: 'A package whose setup waits for the test', gated: true },
      { name: 'hostd-addon', version: '1.0', summary: 'An add-on that needs the demo', depends: 'hostd-demo' },
      { name: 'hostd-broken', version: '1.0', summary: 'Needs what no list has', depends: 'hostd-missing' },
      { name: 'hostd-lib', version: '1.0', summary: 'A library the base needs' },
      { name: 'hostd-base', version: '1.0', summary: 'Base system', depends: 'hostd-lib', essential: true },
    )
    helper = await startHelper({ env: { HOSTD_HELPER_APT_CONFIG: apt.aptConfig } })
    t = await startTestKernel({
      plugins: [createPackagesPlugin({ admindir: apt.admindir, aptConfig: apt.aptConfig }), reader],
      listen: true,
      env: { HOSTD_HELPER_SOCKET: helper.socket },
    })
    admin = await t.login('admin', 'pkg-admin')
  }, 60_000)
  afterAll(async () => {
    await t?.close()
    await helper?.stop()
    await apt?.remove()
  })

  it('refreshes the package lists through the socket', async () => {
    const { result, messages } = await job({ action: 'refresh' })
    expect(result, JSON.stringify(messages)).toMatchObject({
      type: 'result',
      ok: true,
      exitCode: 0,
      action: 'refresh',
      packages: [],
    })
    expect(messages[0]).toMatchObject({
      type: 'accepted',
      job: { action: 'refresh', packages: [], username: 'pkg-admin' },
    })
  })

  it('searches names and summaries as text: exact name first, then prefix, then substring, then summary', async () => {
    const found = await search('HOSTD-DEMO')
    expect(found.items.map((p) => p.name)).toEqual(['hostd-demo', 'hostd-demo-extras', 'hostd-tools'])
    expect(found.items[0]).toEqual({
      name: 'hostd-demo',
      architecture: 'all',
      version: '1.0',
      summary: 'Demo package for hostd tests',
      installed: false,
      installedVersion: null,
      upgradable: false,
      essential: false,
    })
    expect((await search('waits for')).items.map((p) => p.name)).toEqual(['hostd-slow'])
    // Regex and apt-pattern characters are just text: nothing holds them.
    for (const q of ['hostd.*', '?essential', '~nhostd', '^hostd', '(', '[a-z]'])
      expect((await search(q)).total, q).toBe(0)
  })

  it('refuses an empty or too long query with 400', async () => {
    for (const q of ['', '   ', 'x'.repeat(101)]) {
      const res = await t.inject({ url: `/api/packages/search?q=${encodeURIComponent(q)}`, as: 'viewer' })
      expect(res.statusCode, q).toBe(400)
    }
  })

  it('installs a package with live progress; the list and dpkg show it', async () => {
    const { result, messages, closed } = await job({ action: 'install', packages: ['hostd-demo'] })
    expect(result).toMatchObject({ ok: true, exitCode: 0, action: 'install', packages: ['hostd-demo'] })
    expect(closed.code).toBe(1000)
    const progress = messages.filter((m) => m.type === 'progress')
    expect(progress).toContainEqual({
      type: 'progress',
      phase: 'install',
      package: 'hostd-demo',
      percent: 20,
      text: 'Unpacking hostd-demo (amd64)',
    })
    expect(progress.some((m) => m.phase === 'download')).toBe(true)
    // Downloading and dpkg's work each count from 0 to 100.
    const dpkgPercents = progress.filter((m) => m.phase !== 'download').map((m) => m.percent)
    expect(dpkgPercents).toEqual([...dpkgPercents].sort((a, b) => a - b))
    expect(
      messages.some((m) => m.type === 'line' && m.stream === 'stdout' && m.text === 'Setting up hostd-demo (1.0) ...'),
    ).toBe(true)
    expect(messages.at(-1)).toEqual(result)
    expect(await apt.installed()).toEqual({ 'hostd-demo': '1.0' })
    expect(await find('hostd-demo')).toEqual({
      name: 'hostd-demo',
      version: '1.0',
      architecture: 'all',
      summary: 'Demo package for hostd tests',
      installedSizeInBytes: 8192,
      state: 'installed',
      upgradable: false,
      candidateVersion: null,
      essential: false,
    })
    expect((await search('hostd-demo')).items[0]).toMatchObject({
      installed: true,
      installedVersion: '1.0',
      upgradable: false,
    })
  })

  it('sees a newer version after a refresh, upgrades to it, and the list follows', async () => {
    await apt.publish({ name: 'hostd-demo', version: '1.1', summary: 'Demo package for hostd tests' })
    expect((await job({ action: 'refresh' })).result).toMatchObject({ ok: true })
    expect(await find('hostd-demo')).toMatchObject({ version: '1.0', upgradable: true, candidateVersion: '1.1' })
    const listed = await list()
    expect(listed.upgradableCount).toBe(1)
    expect(listed.upgradesCheckedAt).not.toBeNull()
    const updates = (t.kernel.registry.stateOf(reader) as OptionalServices).get(packageUpdates)!
    expect(await updates.upgradable()).toEqual({ count: 1, names: ['hostd-demo'], checkedAt: listed.upgradesCheckedAt })
    const { result } = await job({ action: 'upgrade', packages: ['hostd-demo'] })
    expect(result).toMatchObject({ ok: true, exitCode: 0, action: 'upgrade' })
    expect(await apt.installed()).toEqual({ 'hostd-demo': '1.1' })
    expect(await find('hostd-demo')).toMatchObject({ version: '1.1', upgradable: false, candidateVersion: null })
  })

  it('removes and purges; the list follows', async () => {
    expect((await job({ action: 'install', packages: ['hostd-demo-extras'] })).result).toMatchObject({ ok: true })
    const removed = await job({ action: 'remove', packages: ['hostd-demo'] })
    expect(removed.result).toMatchObject({ ok: true, exitCode: 0, action: 'remove' })
    expect(
      removed.messages.some((m) => m.type === 'progress' && m.phase === 'remove' && m.package === 'hostd-demo'),
    ).toBe(true)
    expect(await find('hostd-demo')).toBeUndefined()
    expect((await job({ action: 'purge', packages: ['hostd-demo-extras'] })).result).toMatchObject({ ok: true })
    expect(await apt.installed()).toEqual({})
    expect((await list()).total).toBe(0)
  })

  it('reports a failed job with its exit code and output, and audits it as a failure', async () => {
    const { result, messages } = await job({ action: 'install', packages: ['no-such-package'] })
    expect(result).toMatchObject({ ok: false, exitCode: 100, action: 'install', packages: ['no-such-package'] })
    expect(
      messages.some(
        (m) => m.type === 'line' && m.stream === 'stderr' && /Unable to locate package no-such-package/.test(m.text),
      ),
    ).toBe(true)
    const entry = (await audit()).find((e) => e.action === 'packages.install' && e.target === 'no-such-package')
    expect(entry).toMatchObject({
      result: 'failure',
      username: 'pkg-admin',
      detail: { exitCode: 100, packages: ['no-such-package'] },
    })
    expect(entry.detail.output.join('\n')).toMatch(/Unable to locate package/)
    // apt's words, translated: the cause and the next step, apt's own line kept under details.
    expect(result).toMatchObject({
      error: 'HOSTD_PACKAGES_NOT_FOUND',
      message: expect.stringMatching(/^No package no-such-package in apt's lists: check the name/),
      details: { raw: expect.stringMatching(/^E: Unable to locate package no-such-package$/m) },
    })
    expect(entry.detail.error).toBe('HOSTD_PACKAGES_NOT_FOUND')
  })

  it('audits every job with who ran it', async () => {
    const entries = await audit()
    for (const [action, target] of [
      ['packages.refresh', 'package lists'],
      ['packages.install', 'hostd-demo'],
      ['packages.upgrade', 'hostd-demo'],
      ['packages.remove', 'hostd-demo'],
      ['packages.purge', 'hostd-demo-extras'],
    ]) {
      expect(
        entries.find((e) => e.action === action && e.target === target),
        `${action} ${target}`,
      ).toMatchObject({ result: 'success', username: 'pkg-admin' })
    }
  })

  it("translates apt's unmet dependencies, an unreachable mirror and dpkg's lock into causes and next steps", async () => {
    const broken = (await job({ action: 'install', packages: ['hostd-broken'] })).result
    expect(broken).toMatchObject({
      ok: false,
      exitCode: 100,
      error: 'HOSTD_PACKAGES_UNMET_DEPENDENCIES',
      message: expect.stringMatching(/^Unmet dependencies: hostd-broken needs hostd-missing, which apt cannot install/),
      details: { raw: expect.stringMatching(/hostd-broken : Depends: hostd-missing but it is not installable/) },
    })

    // A mirror whose name does not resolve: apt-get update says so and exits 0, keeping the old lists.
    const sources = join(apt.dir, 'sources.list')
    const before = await readFile(sources, 'utf8')
    await writeFile(sources, `${before}deb [trusted=yes] http://deb.hostd-offline.invalid/debian bookworm main\n`)
    try {
      const offline = (await job({ action: 'refresh' })).result
      expect(offline).toMatchObject({
        ok: false,
        exitCode: 0,
        error: 'HOSTD_PACKAGES_OFFLINE',
        message: expect.stringMatching(/^No internet connection: apt could not resolve deb\.hostd-offline\.invalid\./),
        details: { raw: expect.stringMatching(/Failed to fetch http:\/\/deb\.hostd-offline\.invalid/) },
      })
    } finally {
      await writeFile(sources, before)
    }

    // dpkg's lock held by another process: the helper's apt-get waits 60 s for it, so this asks apt-get directly
    // (the same command line, a 1 s wait, locking on) and translates what it said.
    const locking = join(apt.dir, 'apt-locking.conf')
    await writeFile(locking, (await readFile(apt.aptConfig, 'utf8')).replace('Debug::NoLocking "1";', ''))
    const holder = spawn(
      'python3',
      [
        '-c',
        'import fcntl,os,sys\nf=os.open(sys.argv[1],os.O_RDWR|os.O_CREAT)\nfcntl.lockf(f,fcntl.LOCK_EX)\nprint(1,flush=True)\nsys.stdin.read()',
        join(apt.admindir, 'lock-frontend'),
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    )
    try {
      await new Promise((resolve) => holder.stdout.once('data', resolve))
      const said = await new Promise<string>((resolve) =>
        execFile(
          'apt-get',
          ['-y', '-q', '-o', 'DPkg::Lock::Timeout=1', 'install', '--', 'hostd-demo'],
          { env: { PATH: process.env.PATH!, LC_ALL: 'C', APT_CONFIG: locking } },
          (_err, stdout, stderr) => resolve(`${stdout}\n${stderr}`),
        ),
      )
      const locked = translateApt(said)
      expect(locked?.code, said).toBe('HOSTD_PACKAGES_LOCKED')
      expect(locked?.message).toMatch(
        new RegExp(
          `^Another package manager is running \\(python3, process ${holder.pid}\\) and holds dpkg's lock: wait`,
        ),
      )
      expect(locked?.details?.raw).toMatch(/Unable to acquire the dpkg frontend lock/)
    } finally {
      holder.kill()
    }
  })

  const INJECTIONS: unknown[] = [
    '-oAPT::Update::Pre-Invoke::=/bin/sh',
    'foo-',
    'foo+',
    '?essential',
    '~nfoo',
    'hostd-demo=1.0',
    'hostd-demo/bookworm',
    './x.deb',
    '*',
    'hostd.*',
    '^hostd',
    'a|b',
    'foo\nbar',
    'foo\0bar',
    '',
    'x'.repeat(129),
    'Foo',
    7,
  ]
  it('refuses every injection form with 400 before anything reaches the helper', async () => {
    const before = (await helper.log()).length
    for (const bad of INJECTIONS) {
      const { result, closed } = await job({ action: 'install', packages: [bad] })
      expect(result, JSON.stringify(bad)).toMatchObject({
        ok: false,
        error: typeof bad === 'string' ? 'HOSTD_PACKAGES_NAME_INVALID' : 'HOSTD_PACKAGES_REQUEST_INVALID',
      })
      expect(closed.code).toBe(4400)
    }
    expect((await job({ action: 'install', packages: ['foo-'] })).result.message).toMatch(/ends with "\+" or "-"/)
    expect((await helper.log()).slice(before)).toEqual([])
    expect(await apt.installed()).toEqual({})
  })

  it('refuses malformed requests: unknown action, extra keys, names where none belong, none where some must be', async () => {
    for (const request of [
      { action: 'dist-upgrade' },
      { action: 'install', packages: ['hostd-demo'], force: true },
      { action: 'refresh', packages: ['hostd-demo'] },
      { action: 'install' },
      { action: 'remove', packages: [] },
      'not json',
      '{"action":"install","action":"remove","packages":["a1"]}',
    ]) {
      const { result, closed } = await job(request)
      expect(result, JSON.stringify(request)).toMatchObject({ ok: false, error: 'HOSTD_PACKAGES_REQUEST_INVALID' })
      expect(closed.code).toBe(4400)
    }
  })

  it('lets only admins open the socket', async () => {
    for (const role of ['viewer', 'operator'] as const) {
      const { token } = await t.login(role)
      expect((await openSocket(t, '/api/packages/exec', token, { action: 'refresh' }).closed).code, role).toBe(403)
    }
    const crossOrigin = openSocket(
      t,
      '/api/packages/exec',
      admin.token,
      { action: 'refresh' },
      { origin: 'https://evil.example' },
    )
    expect((await crossOrigin.closed).code).toBe(403)
  })

  it('runs one job at a time; a closed socket does not stop its job, whose result is audited', async () => {
    const first = openSocket(t, '/api/packages/exec', admin.token, { action: 'install', packages: ['hostd-slow'] })
    // The gated postinst holds the job at "Configuring" until the test releases it.
    await first.waitFor((m) => m.type === 'progress' && m.phase === 'configure' && m.package === 'hostd-slow')
    expect((await list()).job).toMatchObject({ action: 'install', packages: ['hostd-slow'], username: 'pkg-admin' })
    // dpkg already lists the half-installed package while apt's candidates predate it: a search lists it once.
    expect((await search('hostd-slow')).items).toEqual([
      expect.objectContaining({ name: 'hostd-slow', installed: true }),
    ])
    const second = await job({ action: 'install', packages: ['hostd-demo'] })
    expect(second.result).toMatchObject({
      ok: false,
      error: 'HOSTD_PACKAGES_BUSY',
      job: { action: 'install', packages: ['hostd-slow'] },
    })
    expect(second.result.message).toMatch(/install hostd-slow/)
    expect(second.closed.code).toBe(4409)
    first.ws.close()
    await first.closed
    await apt.release()
    const entry = await until('the audit of the abandoned job', audit, (entries) =>
      entries.some((e) => e.action === 'packages.install' && e.target === 'hostd-slow'),
    )
    expect(entry.find((e) => e.target === 'hostd-slow')).toMatchObject({ result: 'success', detail: { exitCode: 0 } })
    expect(await apt.installed()).toEqual({ 'hostd-slow': '1.0' })
    expect(await find('hostd-slow')).toMatchObject({ version: '1.0', state: 'installed' })
    await until('the job to be over', list, (l) => l.job === null)
  })

  it('answers 423 on the socket without the root helper, and runs nothing', async () => {
    const alone = await startTestKernel({
      plugins: [createPackagesPlugin({ admindir: apt.admindir, aptConfig: apt.aptConfig })],
      listen: true,
    })
    try {
      const { token } = await alone.login('admin')
      const session = openSocket(alone, '/api/packages/exec', token, { action: 'install', packages: ['hostd-demo'] })
      expect((await session.closed).code).toBe(4423)
      expect(session.messages).toEqual([
        expect.objectContaining({ type: 'result', ok: false, error: 'HOSTD_HELPER_UNAVAILABLE' }),
      ])
    } finally {
      await alone.close()
    }
  })

  it('tells what a removal takes along before it runs, and never removes what the system needs', async () => {
    expect((await job({ action: 'install', packages: ['hostd-demo', 'hostd-addon'] })).result).toMatchObject({
      ok: true,
    })
    const before = (await helper.log()).length
    const asked = await t.inject({ url: '/api/packages/removal?name=hostd-demo', as: 'admin' })
    expect(asked.statusCode, asked.body).toBe(200)
    expect(asked.json()).toEqual({
      name: 'hostd-demo',
      removes: [
        { name: 'hostd-demo', architecture: 'all', version: '1.1', summary: 'Demo package for hostd tests' },
        { name: 'hostd-addon', architecture: 'all', version: '1.0', summary: 'An add-on that needs the demo' },
      ],
    })
    // Asked through the root helper's simulation, which removed nothing.
    expect((await helper.log()).slice(before)).toEqual([
      expect.objectContaining({ action: 'pkg.simulateRemove', args: { packages: ['hostd-demo'] } }),
    ])
    expect(await apt.installed()).toMatchObject({ 'hostd-demo': '1.1', 'hostd-addon': '1.0' })
    for (const role of ['viewer', 'operator'] as const)
      expect((await t.inject({ url: '/api/packages/removal?name=hostd-demo', as: role })).statusCode, role).toBe(403)
    const absent = await t.inject({ url: '/api/packages/removal?name=hostd-tools', as: 'admin' })
    expect([absent.statusCode, absent.json().error]).toEqual([404, 'HOSTD_PACKAGES_NOT_INSTALLED'])
    const bad = await t.inject({ url: '/api/packages/removal?name=-oAPT::x', as: 'admin' })
    expect([bad.statusCode, bad.json().error]).toEqual([400, 'HOSTD_PACKAGES_NAME_INVALID'])

    // An essential package, and a library it needs: neither is removed, asked or not, and the list says which.
    expect((await job({ action: 'install', packages: ['hostd-base'] })).result).toMatchObject({ ok: true })
    expect(await find('hostd-base')).toMatchObject({ essential: true })
    expect(await find('hostd-lib')).toMatchObject({ essential: false })
    const base = await t.inject({ url: '/api/packages/removal?name=hostd-base', as: 'admin' })
    expect([base.statusCode, base.json().error]).toEqual([409, 'HOSTD_PACKAGES_ESSENTIAL'])
    expect(base.json().message).toMatch(/^hostd-base is essential to this system/)
    const lib = await t.inject({ url: '/api/packages/removal?name=hostd-lib', as: 'admin' })
    expect([lib.statusCode, lib.json().error]).toEqual([409, 'HOSTD_PACKAGES_ESSENTIAL'])
    expect(lib.json().message).toMatch(/^Removing hostd-lib would also remove hostd-base, which this system needs/)
    for (const packages of [['hostd-base'], ['hostd-lib']]) {
      for (const action of ['remove', 'purge']) {
        const { result, closed } = await job({ action, packages })
        expect(result, `${action} ${packages}`).toMatchObject({ ok: false, error: 'HOSTD_PACKAGES_ESSENTIAL' })
        expect(closed.code).toBe(4409)
      }
    }
    expect(await apt.installed()).toMatchObject({ 'hostd-base': '1.0', 'hostd-lib': '1.0' })
    expect((await helper.log()).some((e) => e.action === 'pkg.remove' && e.args.packages.includes('hostd-lib'))).toBe(
      false,
    )
  })

  it("left the machine's own dpkg database untouched", () => {
    expect(machineStatus()).toBe(statusBefore)
  })
})
