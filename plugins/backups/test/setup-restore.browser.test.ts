/**
 * hostd restored from its first-run setup page (kernel/src/setup-restore.ts with this plugin's `backups.setup-restore`
 * service), end to end: a kernel with users, an API token, two-factor, a skill and a setting (branding) is backed up
 * with the real restic; a fresh daemon on an empty data folder offers "Restore from a backup" on its setup page, in
 * Debian's Chromium; the recovery kit file fills the form, the backup is listed and restored, the daemon restarts
 * on the restored data, and the same user signs in with their password and two-factor code; the token, the skill and
 * the setting work. The setup-time routes answer only while the instance has no users, and refuse a wrong password
 * or an unsafe repository name. Screenshots light and dark in .hostd-test/screenshots/setup-restore-*.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestKernel } from '@hostd/sdk/testing'
import branding from '../../branding/src/index.ts'
import skills from '../../skills/src/index.ts'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../../../test/support/browser.ts'
import { currentStep, enrollTwoFactor, totp, type Enrolled } from '../../../test/support/two-factor.ts'
import { createBackupsPlugin } from '../src/index.ts'
import { job, post, repository, runJob } from './helpers.ts'

const PASSWORD = 'a long enough password 1'

describe('hostd restored from the first-run setup page', { timeout: 300_000 }, () => {
  let work: string
  let ui: UiHarness | undefined
  let kit: { repository: string; password: string; text: string }
  let token: string
  let enrolled: Enrolled

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'hostd-setup-restore-'))
    // The instance to back up: in-process, with the plugins whose state must come back.
    const a = await startTestKernel({
      plugins: [skills, branding, createBackupsPlugin({ roots: [{ name: 'files', path: join(work, 'root') }] })],
    })
    try {
      const alice = await a.kernel.services.users.create('alice', PASSWORD, 'admin')
      enrolled = await enrollTwoFactor(a, alice.id)
      token = a.kernel.services.sessions.apiTokens.create(
        { id: alice.id, role: 'admin' },
        { name: 'script', role: 'admin', expiresAt: null, prefixes: null },
        null,
      ).secret
      const skill = await post(a, '/api/skills', {
        body: '---\nname: restore-me\ndescription: A skill that must survive\n---\n# Steps\n\n1. Back up.\n',
      })
      expect(skill.statusCode, skill.body).toBeLessThan(300)
      const named = await a.inject({
        method: 'PUT',
        url: '/api/branding',
        as: 'admin',
        payload: { serverName: 'Restored box' },
      })
      expect(named.statusCode, named.body).toBe(200)
      const repo = await repository(a, 'usb', { kind: 'local', path: join(work, 'repo') })
      kit = { ...repo.recoveryKit!, repository: repo.repository.repository }
      const id = await job(a, { name: 'hostd', repositoryId: repo.repository.id })
      expect((await runJob(a, id)).json()).toMatchObject({ status: 'success' })
    } finally {
      await a.close()
    }
    await writeFile(join(work, 'recovery-kit.txt'), kit.text)
    // A fresh daemon on an empty data folder: first-run setup.
    ui = await startUi({
      builtinPlugins: true,
      setup: false,
      env: { HOSTD_BUILTIN_PLUGINS: 'backups,skills,branding' },
    })
  }, 180_000)
  afterAll(async () => {
    await ui?.close()
    if (work) await rm(work, { recursive: true, force: true })
  })

  const send = async (path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await ui!.daemon.fetch(path, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, text, json: (): any => JSON.parse(text) }
  }

  it('restores users, the token, two-factor, the skill and settings, and closes setup', async () => {
    const u = ui!
    // Refused before anything runs: a wrong password, a repository name ssh would read as an option.
    const wrong = await send('/api/setup/restore/snapshots', { repository: kit.repository, password: 'not it' })
    expect([wrong.status, wrong.json().error]).toEqual([422, 'HOSTD_BACKUPS_WRONG_PASSWORD'])
    const unsafe = await send('/api/setup/restore/snapshots', {
      repository: 'sftp:-oProxyCommand=touch /tmp/x@host:/r',
      password: kit.password,
    })
    expect([unsafe.status, unsafe.json().error]).toEqual([400, 'HOSTD_BACKUPS_INVALID'])

    const page = await u.newPage()
    await page.goto(u.url)
    await page.getByRole('button', { name: 'Restore from a backup' }).click()
    await page.getByLabel('Recovery kit (optional)').setInputFiles(join(work, 'recovery-kit.txt'))
    await expect.poll(() => page.getByLabel('Repository', { exact: true }).inputValue()).toBe(kit.repository)
    await page.getByRole('button', { name: 'Find backups' }).click()
    await page.getByLabel('Backup to restore').waitFor()
    await expectAccessible(page)
    await screenshot(page, 'setup-restore')
    await page.getByRole('button', { name: 'Restore this backup' }).click()
    await page.getByRole('status').filter({ hasText: 'hostd is restarting' }).waitFor()
    // The daemon comes back on the restored data; the page reloads into the sign-in, with the restored branding.
    await page.getByRole('button', { name: 'Sign in' }).waitFor({ timeout: 60_000 })
    await page.getByText('Restored box').first().waitFor()
    await page.getByLabel('User name').fill('alice')
    await page.getByLabel('Password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByLabel('Authentication code').fill(totp(enrolled.secret, Math.max(currentStep(), enrolled.step + 1)))
    await page.getByRole('button', { name: 'Verify' }).click()
    await page.getByRole('button', { name: /alice/ }).first().waitFor()

    // The token, the skill, this plugin's repository (its sealed password opens it: the key came back too).
    const auth = { authorization: `Bearer ${token}` }
    expect((await send('/api/auth/me', undefined, auth)).json()).toMatchObject({ username: 'alice' })
    expect((await send('/api/skills', undefined, auth)).text).toContain('restore-me')
    const repos = (await send('/api/backups/repositories', undefined, auth)).json()
    const snaps = await send(`/api/backups/repositories/${repos.items[0].id}/snapshots`, undefined, auth)
    expect(snaps.status, snaps.text).toBe(200)
    expect(snaps.json().items).toHaveLength(1)
    // Setup is closed now: the routes answer 409, and nothing offers a restore.
    expect((await send('/api/setup/restore')).json()).toEqual({ available: false, restoring: false })
    const again = await send('/api/setup/restore/snapshots', { repository: kit.repository, password: kit.password })
    expect([again.status, again.json().error]).toEqual([409, 'HOSTD_SETUP_ALREADY_DONE'])
    expect(u.daemon.stdout()).toMatch(/restored from snapshot [0-9a-f]{8}: restarting/)
    u.assertNoCspViolations()
  })
})
