import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connect } from 'node:net'
import { createAptRoot, machineDpkgStatusHash as machineStatus, type AptRoot } from '../../test/support/apt-root.ts'
import { startHelper, type RunningHelper } from './start-helper.ts'

/**
 * The helper's package actions (pkg.refresh, pkg.install, pkg.upgrade, pkg.remove, pkg.purge), run for real:
 * apt-get and dpkg on an isolated root (test/support/apt-root.ts) that the helper reaches through its own
 * HOSTD_HELPER_APT_CONFIG setting. Checks the name rules against every apt injection form, the argument vectors,
 * the streamed protocol, one job at a time, and that a job outlives the connection that asked for it.
 */

/** One request; collects the event lines and the final answer line. `hangUpAfter` closes after that many events. */
function stream(socket: string, body: unknown, hangUpAfter?: number): Promise<{ events: any[]; answer: any }> {
  return new Promise((resolve, reject) => {
    const conn = connect(socket)
    const events: any[] = []
    let buffer = ''
    conn.setEncoding('utf8')
    conn.on('connect', () => conn.write(`${JSON.stringify(body)}\n`))
    conn.on('data', (chunk: string) => {
      buffer += chunk
      for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
        const line = JSON.parse(buffer.slice(0, i))
        buffer = buffer.slice(i + 1)
        if ('event' in line) {
          events.push(line.event)
          if (events.length === hangUpAfter) {
            conn.destroy()
            return resolve({ events, answer: null })
          }
        } else {
          conn.end()
          return resolve({ events, answer: line })
        }
      }
    })
    conn.on('error', reject)
  })
}

async function until<T>(what: string, probe: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const value = await probe()
    if (ok(value)) return value
    if (attempt > 600) throw new Error(`${what}: still ${JSON.stringify(value)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

// Every form in host-features.md section 5 that would make apt-get do something else than install that name.
const INJECTIONS: unknown[] = [
  '-oAPT::Update::Pre-Invoke::=/bin/sh',
  '--version',
  'foo-',
  'foo+',
  'foo:amd64-',
  '?essential',
  '~nfoo',
  'name=1.0',
  'name/bookworm',
  './x.deb',
  '/tmp/x.deb',
  '*',
  'foo*',
  'fo.*',
  '^foo$',
  'foo|bar',
  '[a-z]+',
  '(foo)',
  'foo\nbar',
  'foo\0bar',
  '',
  'a',
  'x'.repeat(129),
  'Foo',
  'foo bar',
  'foo;id',
  '$(id)',
  'foo:',
  'foo:AMD64',
  1,
  null,
  ['foo'],
]

describe('root helper: package actions', () => {
  let apt: AptRoot
  let helper: RunningHelper
  let statusBefore: string

  beforeAll(async () => {
    statusBefore = machineStatus()
    apt = await createAptRoot()
    await apt.publish(
      { name: 'hostd-demo', version: '1.0', summary: 'hostd demo package' },
      { name: 'hostd-slow', version: '1.0', summary: 'hostd demo package that waits', gated: true },
    )
    helper = await startHelper({ env: { HOSTD_HELPER_APT_CONFIG: apt.aptConfig } })
  })
  afterAll(async () => {
    await helper?.stop()
    await apt?.remove()
  })

  it.each(['pkg.install', 'pkg.upgrade', 'pkg.remove', 'pkg.purge'])(
    '%s refuses every injection form with 400, and runs nothing',
    async (action) => {
      for (const bad of INJECTIONS) {
        const answer = await helper.call(action, { packages: ['hostd-demo', bad] })
        expect(answer, `${action} ${JSON.stringify(bad)}`).toMatchObject({
          ok: false,
          status: 400,
          error: 'HOSTD_HELPER_INVALID_ARGUMENT',
        })
      }
      const entries = (await helper.log()).filter((e) => e.action === action)
      expect(entries).toHaveLength(INJECTIONS.length)
      for (const entry of entries) {
        expect(entry).toMatchObject({ outcome: 'refused', status: 400 })
        expect(entry).not.toHaveProperty('argv')
        expect(entry).not.toHaveProperty('exitCode')
      }
      expect(await apt.installed()).toEqual({})
    },
  )

  it('says why a trailing "+" or "-" is refused', async () => {
    expect((await helper.call('pkg.install', { packages: ['foo-'] })).message).toMatch(/must not end with "\+" or "-"/)
  })

  it('refuses an empty or oversized list, and names for refresh', async () => {
    expect(await helper.call('pkg.install', { packages: [] })).toMatchObject({ ok: false, status: 400 })
    expect(await helper.call('pkg.remove', {})).toMatchObject({ ok: false, status: 400 })
    expect(await helper.call('pkg.install', { packages: Array.from({ length: 51 }, (_, i) => `p${i}`) })).toMatchObject(
      { ok: false, status: 400 },
    )
    expect(await helper.call('pkg.refresh', { packages: ['hostd-demo'] })).toMatchObject({ ok: false, status: 400 })
  })

  it('streams a real job: output and apt status lines as events, then the exit code', async () => {
    const refresh = await stream(helper.socket, { action: 'pkg.refresh', args: {} })
    expect(refresh.answer).toEqual({ ok: true, result: { exitCode: 0 } })
    const { events, answer } = await stream(helper.socket, {
      action: 'pkg.install',
      args: { packages: ['hostd-demo'] },
    })
    expect(answer).toEqual({ ok: true, result: { exitCode: 0 } })
    expect(events).toContainEqual({
      stream: 'status',
      text: 'pmstatus:hostd-demo:80.0000:Installed hostd-demo (amd64)',
    })
    expect(events.some((e) => e.stream === 'stdout' && /Setting up hostd-demo \(1\.0\)/.test(e.text))).toBe(true)
    expect(await apt.installed()).toEqual({ 'hostd-demo': '1.0' })
    const entry = (await helper.log()).findLast((e) => e.action === 'pkg.install')
    expect(entry).toMatchObject({ outcome: 'ok', exitCode: 0 })
    expect(entry!.argv.slice(-3)).toEqual(['install', '--', 'hostd-demo'])
  })

  it('never lets apt read a name as a regex: "hostd-dem." installs nothing (APT::Cmd::Pattern-Only)', async () => {
    await stream(helper.socket, { action: 'pkg.remove', args: { packages: ['hostd-demo'] } })
    const { events, answer } = await stream(helper.socket, {
      action: 'pkg.install',
      args: { packages: ['hostd-dem.'] },
    })
    expect(answer).toEqual({ ok: true, result: { exitCode: 100 } })
    expect(events.some((e) => e.stream === 'stderr' && /Unable to locate package hostd-dem\./.test(e.text))).toBe(true)
    expect(await apt.installed()).toEqual({})
    expect((await helper.log()).findLast((e) => e.action === 'pkg.install')).toMatchObject({
      outcome: 'failed',
      exitCode: 100,
    })
  })

  it('runs one job at a time, and a job outlives the connection that asked for it', async () => {
    // The gated package's postinst waits for the test, so the first job is surely running during the second request.
    const first = await stream(helper.socket, { action: 'pkg.install', args: { packages: ['hostd-slow'] } }, 1)
    expect(first.answer).toBeNull() // hung up after the first event
    const second = await helper.call('pkg.install', { packages: ['hostd-demo'] })
    expect(second).toMatchObject({ ok: false, status: 409, error: 'HOSTD_HELPER_BUSY' })
    await apt.release()
    const done = await until(
      'the abandoned job',
      () => helper.log(),
      (log) => log.some((e) => e.action === 'pkg.install' && e.args.packages[0] === 'hostd-slow' && 'exitCode' in e),
    )
    expect(done.findLast((e) => e.args?.packages?.[0] === 'hostd-slow')).toMatchObject({ outcome: 'ok', exitCode: 0 })
    expect(await apt.installed()).toEqual({ 'hostd-slow': '1.0' })
  })

  it("left the machine's own dpkg database untouched", () => {
    expect(machineStatus()).toBe(statusBefore)
  })
})

describe('root helper: package actions in dry-run mode', () => {
  let helper: RunningHelper
  beforeAll(async () => {
    helper = await startHelper({ dryRun: true })
  })
  afterAll(() => helper.stop())

  const apt = [
    'apt-get',
    '-y',
    '-q',
    '-o',
    'APT::Status-Fd=3',
    '-o',
    'APT::Cmd::Pattern-Only=1',
    '-o',
    'DPkg::Lock::Timeout=60',
    '-o',
    'Dpkg::Options::=--force-confdef',
    '-o',
    'Dpkg::Options::=--force-confold',
  ]
  it.each([
    ['pkg.refresh', {}, [...apt, 'update', '--']],
    [
      'pkg.install',
      { packages: ['libstdc++6:amd64', 'python3.11', '0ad'] },
      [...apt, 'install', '--', 'libstdc++6:amd64', 'python3.11', '0ad'],
    ],
    ['pkg.upgrade', { packages: ['hostd-demo'] }, [...apt, 'install', '--only-upgrade', '--', 'hostd-demo']],
    ['pkg.upgrade', {}, [...apt, 'upgrade', '--']],
    ['pkg.remove', { packages: ['hostd-demo'] }, [...apt, 'remove', '--', 'hostd-demo']],
    ['pkg.purge', { packages: ['hostd-demo'] }, [...apt, 'purge', '--', 'hostd-demo']],
  ])('answers the argument vector of %s %j without running it', async (action, args, argv) => {
    expect(await helper.call(action, args)).toEqual({ ok: true, result: { dryRun: true, argv } })
  })
})
