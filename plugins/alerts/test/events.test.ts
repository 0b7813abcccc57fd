/**
 * The rules about hostd itself and the host, on real kernel events (`tokens.events`): a third-party plugin that
 * fails its start, an admin account created and a user made admin through the users API, a burst of failed sign-ins
 * through the sign-in route, two-factor reset by an admin, hostd killed (SIGKILL) and started again, a reboot
 * required (the file), updates waiting (a stand-in for the packages plugin's `packages.updates`: the real one is
 * tested in plugins/packages/test). Notifications reach a real local webhook receiver.
 */
import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bind } from '@hostd/sdk'
import { eventually, startTestKernel, writePluginFolder, type TestKernel } from '@hostd/sdk/testing'
import { enrollTwoFactor } from '../../../test/support/two-factor.ts'
import { createAlertsPlugin } from '../src/index.ts'
import { packageUpdates, type AlertService } from '../src/service.ts'
import { httpReceiver, type HttpReceiver } from './support/receivers.ts'

/** Polls until `check` stops throwing (the test's timeout bounds the wait). */
const until = (check: () => unknown) =>
  eventually(async () => {
    try {
      await check()
      return true
    } catch {
      return false
    }
  })

let work: string
let dataDir: string
let rebootFile: string
let receiver: HttpReceiver
let t: TestKernel
const updates = { count: 3, names: ['libc6', 'openssl', 'tzdata'] }

function boot(): Promise<TestKernel> {
  return startTestKernel({
    plugins: [createAlertsPlugin({ smartIntervalMs: 0, systemIntervalMs: 0, attachIntervalMs: 60_000, rebootFile })],
    services: [bind(packageUpdates, { upgradable: async () => ({ ...updates, checkedAt: null }) })],
    env: {
      HOSTD_DATA_DIR: dataDir,
      HOSTD_PLUGINS_DIR: join(work, 'plugins'),
      HOSTD_PLUGINS_ISOLATION: 'off',
    },
  })
}

interface Sent {
  status: string
  alerts: { status: string; labels: Record<string, string>; annotations: { summary: string; value?: string } }[]
}
const sent = (rule: string) =>
  receiver.requests
    .map((q) => JSON.parse(q.body) as Sent)
    .flatMap((b) => b.alerts.filter((a) => a.labels.rule === rule).map((a) => ({ ...a, status: b.status })))

const service = () => t.kernel.registry.stateOf(t.kernel.registry.find('alerts')!.definition!) as AlertService
let stamp = 0
const json = (payload: unknown) => ({
  headers: { 'content-type': 'application/json' },
  payload: JSON.stringify(payload),
})

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hostd-alerts-events-'))
  dataDir = join(work, 'data')
  rebootFile = join(work, 'reboot-required')
  await mkdir(join(work, 'plugins'))
  receiver = await httpReceiver()
  t = await boot()
  const res = await t.inject({
    method: 'POST',
    url: '/api/alerts/channels',
    as: 'admin',
    payload: { name: 'hook', type: 'webhook', options: { url: `${receiver.url}/events` } },
  })
  expect(res.statusCode, res.body).toBe(201)
})
afterAll(async () => {
  await t?.close()
  await receiver?.close()
  await rm(work, { recursive: true, force: true })
})

describe('default rules', () => {
  it('are made once, the updates rule off; each kind is validated', async () => {
    const rules = (await t.inject({ url: '/api/alerts/rules', as: 'viewer' })).json().items as {
      id: string
      enabled: boolean
      source: string
      severity: string
    }[]
    expect(rules.map((r) => [r.id, r.source, r.enabled, r.severity])).toEqual([
      ['disk-full', 'metric', true, 'warning'],
      ['smart-failing', 'smart', true, 'critical'],
      ['container-down', 'container', true, 'critical'],
      ['plugin-failed', 'plugin', true, 'warning'],
      ['sign-in-failures', 'account', true, 'warning'],
      ['new-admin', 'account', true, 'warning'],
      ['two-factor-off', 'account', true, 'warning'],
      ['daemon-restarted', 'daemon', true, 'info'],
      ['updates-waiting', 'system', false, 'info'],
      ['reboot-required', 'system', true, 'info'],
    ])
    const bad = await t.inject({
      method: 'POST',
      url: '/api/alerts/rules',
      as: 'admin',
      payload: { name: 'x', source: 'account', condition: 'down' },
    })
    expect(bad.statusCode).toBe(400)
    expect(bad.json()).toMatchObject({ error: 'HOSTD_ALERTS_RULE_INVALID' })
    expect(bad.json().message).toContain('one of failedSignIns, newAdmin, twoFactorOff')
  })
})

describe('a plugin failed', () => {
  const source = (version: string, start: string) => `import { definePlugin } from '@hostd/sdk'
export default definePlugin({ id: 'flaky', version: '${version}', kernel: '^1.3.0', start: () => { ${start} } })
`
  const folder = (version: string, start: string) =>
    writePluginFolder(join(work, 'src', `flaky-${version}`), {
      name: 'flaky',
      version,
      entry: 'src/index.js',
      files: { 'src/index.js': source(version, start) },
    })

  it('fires with its error, and resolves once a version that works replaces it', async () => {
    const entry = await t.plugins.install(await folder('1.0.0', "throw new Error('no config file')"))
    expect(entry.state).toBe('failed')
    await until(() => expect(sent('plugin-failed').map((a) => a.status)).toEqual(['firing']))
    const firing = sent('plugin-failed')[0]!
    expect(firing.labels).toMatchObject({ target: 'flaky', plugin: 'flaky', version: '1.0.0', severity: 'warning' })
    expect(firing.annotations.summary).toBe('Plugin flaky 1.0.0 failed: no config file')
    expect((await t.plugins.upgrade('flaky', await folder('1.0.1', ''))).state).toBe('active')
    await until(() => expect(sent('plugin-failed').map((a) => a.status)).toEqual(['firing', 'resolved']))
    await t.plugins.remove('flaky')
  })
})

describe('account rules', () => {
  it('fire on a new admin account and on a user made admin, saying who did it', async () => {
    const admin = await t.login('admin', `boss-${++stamp}`)
    const as = { token: admin.token }
    const created = await t.inject({
      method: 'POST',
      url: '/api/users',
      as,
      ...json({ username: 'second-admin', password: 'a long enough password', role: 'admin' }),
    })
    expect(created.statusCode, created.body).toBe(201)
    const viewer = await t.inject({
      method: 'POST',
      url: '/api/users',
      as,
      ...json({ username: 'promoted', password: 'a long enough password', role: 'viewer' }),
    })
    await until(() => expect(sent('new-admin')).toHaveLength(1))
    const promoted = await t.inject({
      method: 'POST',
      url: `/api/users/${viewer.json().id}/role`,
      as,
      ...json({ role: 'admin' }),
    })
    expect(promoted.statusCode, promoted.body).toBeLessThan(300)
    await until(() => expect(sent('new-admin')).toHaveLength(2))
    expect(sent('new-admin').map((a) => [a.status, a.labels.target, a.annotations.summary])).toEqual([
      ['firing', 'second-admin', `New admin account second-admin, created by ${admin.username}`],
      ['firing', 'promoted', `promoted was made an admin by ${admin.username}`],
    ])
    // Shown for a day: both still listed as firing.
    const firing = (await t.inject({ url: '/api/alerts', as: 'viewer' })).json().items as { ruleId: string }[]
    expect(firing.filter((a) => a.ruleId === 'new-admin')).toHaveLength(2)
  })

  it("fire when an admin resets a user's two-factor sign-in that was on", async () => {
    const user = await t.login('operator', `with-2fa-${++stamp}`)
    await enrollTwoFactor(t as never, user.userId)
    const res = await t.inject({ method: 'POST', url: `/api/users/${user.userId}/two-factor/reset`, as: 'admin' })
    expect(res.statusCode, res.body).toBeLessThan(300)
    await until(() => expect(sent('two-factor-off')).toHaveLength(1))
    expect(sent('two-factor-off')[0]!.annotations.summary).toMatch(
      new RegExp(`^Two-factor sign-in of ${user.username} was turned off \\(reset by admin`),
    )
  })

  it('fire once on a burst of failed sign-ins, with the count and where they came from, never a password', async () => {
    const fail = (username: string) =>
      t.inject({ method: 'POST', url: '/api/auth/login', ...json({ username, password: 'guess-123456' }) })
    for (let i = 0; i < 9; i++) await fail(i < 4 ? 'admin' : 'root')
    // Nine are not ten: nothing yet (the webhook would have it by the time the tenth's is in).
    await fail('root')
    await until(() => expect(sent('sign-in-failures')).toHaveLength(1))
    for (let i = 0; i < 3; i++) await fail('root')
    const burst = sent('sign-in-failures')[0]!
    expect(burst.status).toBe('firing')
    expect(burst.annotations.value).toBe('10')
    expect(burst.annotations.summary).toMatch(
      /^10 failed sign-ins within 5 min, most from 127\.0\.0\.1; names tried: root, admin$/,
    )
    expect(JSON.stringify(receiver.requests)).not.toContain('guess-123456')
    await until(async () => {
      const items = (await t.inject({ url: '/api/alerts', as: 'viewer' })).json().items as {
        ruleId: string
        value: number
      }[]
      expect(items.find((a) => a.ruleId === 'sign-in-failures')?.value).toBe(13)
    })
    // Still one notification: the burst goes on in the same episode.
    expect(sent('sign-in-failures')).toHaveLength(1)
  })
})

describe('system rules', () => {
  it('fire when a reboot is required (with the packages asking) and resolve once it is not', async () => {
    await writeFile(rebootFile, '*** System restart required ***\n')
    await writeFile(`${rebootFile}.pkgs`, 'linux-image-amd64\nlibc6\nlibc6\n')
    await service().checkSystem()
    await until(() => expect(sent('reboot-required')).toHaveLength(1))
    expect(sent('reboot-required')[0]!.labels.severity).toBe('info')
    expect(sent('reboot-required')[0]!.annotations.summary).toBe(
      'The host needs a reboot (for linux-image-amd64, libc6)',
    )
    await rm(rebootFile)
    await service().checkSystem()
    await until(() => expect(sent('reboot-required').map((a) => a.status)).toEqual(['firing', 'resolved']))
  })

  it('say nothing of updates until the rule is turned on; then fire with the count', async () => {
    await service().checkSystem()
    expect(sent('updates-waiting')).toEqual([])
    const res = await t.inject({
      method: 'PUT',
      url: '/api/alerts/rules/updates-waiting',
      as: 'admin',
      payload: { enabled: true },
    })
    expect(res.statusCode, res.body).toBe(200)
    await until(() => expect(sent('updates-waiting')).toHaveLength(1))
    expect(sent('updates-waiting')[0]!.annotations).toEqual({
      summary: '3 package updates waiting: libc6, openssl, tzdata',
      value: '3',
    })
    updates.count = 0
    updates.names = []
    await service().checkSystem()
    await until(() => expect(sent('updates-waiting').map((a) => a.status)).toEqual(['firing', 'resolved']))
  })
})

describe('backup rules', () => {
  it('fire when a backup job fails, with the reason, and resolve when a run of it succeeds', async () => {
    const made = await t.inject({
      method: 'POST',
      url: '/api/alerts/rules',
      as: 'admin',
      payload: { name: 'Backups', source: 'backup', condition: 'backupFailed', match: 'nightly*' },
    })
    expect(made.statusCode, made.body).toBe(201)
    const id = made.json().id as string
    // As the backups plugin records each run (plugins/backups/src/service.ts, `backups.run`).
    const run = (target: string, result: 'success' | 'failure', message?: string) =>
      t.kernel.services.audit.record({
        action: 'backups.run',
        target,
        result,
        detail: message ? { error: 'HOSTD_BACKUPS_UNREACHABLE', message } : {},
      })
    await run('weekly', 'failure', 'not watched by this rule')
    await run('nightly', 'failure', 'The SFTP host cannot be reached')
    await until(() => expect(sent(id)).toHaveLength(1))
    expect(sent(id)[0]!.labels).toMatchObject({ job: 'nightly' })
    expect(sent(id)[0]!.annotations.summary).toBe('Backup job nightly failed: The SFTP host cannot be reached')
    await run('nightly', 'success')
    await until(() => expect(sent(id).map((a) => a.status)).toEqual(['firing', 'resolved']))
    const wrong = await t.inject({
      method: 'POST',
      url: '/api/alerts/rules',
      as: 'admin',
      payload: { name: 'x', source: 'backup', condition: 'down' },
    })
    expect(wrong.json().message).toContain('one of backupFailed')
  })
})

/** hostd in a process of its own on the same data folder (support/crash-child.ts), ended by `signal`. */
async function runElsewhere(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
  await t.close()
  const child = spawn(process.execPath, [join(import.meta.dirname, 'support', 'crash-child.ts'), dataDir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const ended = new Promise<number | null>((resolve) => child.on('exit', resolve))
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve())
    void ended.then((code) => reject(new Error(`the child ended (${code}) before it was ready`)))
  })
  child.kill(signal)
  await ended
  t = await boot()
}

describe('hostd restarted', () => {
  it('says nothing after a clean stop', async () => {
    await runElsewhere('SIGTERM')
    const items = (await t.inject({ url: '/api/alerts', as: 'viewer' })).json().items as { ruleId: string }[]
    expect(items.map((a) => a.ruleId)).not.toContain('daemon-restarted')
    expect(sent('daemon-restarted')).toEqual([])
  })

  it('fires once (info) after a process that was killed', async () => {
    await runElsewhere('SIGKILL')
    await until(() => expect(sent('daemon-restarted')).toHaveLength(1))
    const restarted = sent('daemon-restarted')[0]!
    expect(restarted.labels).toMatchObject({ severity: 'info', target: 'hostd' })
    expect(restarted.annotations.summary).toMatch(
      /^hostd started again at .* without a clean stop \(.*the host kept running\)/,
    )
  })
})
