/**
 * hostd backed up and restored into a fresh data folder (src/restore-hostd.ts, as run from the recovery kit): a
 * kernel started on it has the same users (passwords), API tokens, two-factor (sealed with the restored key),
 * skills, settings, and this plugin's repositories (their sealed passwords open them).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import skills from '../../skills/src/index.ts'
import { currentStep, enrollTwoFactor, totp } from '../../../test/support/two-factor.ts'
import { createBackupsPlugin } from '../src/index.ts'
import { restoreHostd } from '../src/restore-hostd.ts'
import { job, post, repository, runJob } from './helpers.ts'

const run = promisify(execFile)
const PASSWORD = 'a long enough password 1'

describe('hostd restored into a fresh data folder', () => {
  let work: string
  let a: TestKernel | undefined
  let b: TestKernel | undefined
  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'hostd-backups-self-'))
  })
  afterAll(async () => {
    await a?.close()
    await b?.close()
    await rm(work, { recursive: true, force: true })
  })

  it('brings back users, tokens, two-factor, skills, settings and repositories', async () => {
    const plugins = () => [skills, createBackupsPlugin({ roots: [{ name: 'files', path: join(work, 'root') }] })]
    a = await startTestKernel({ plugins: plugins() })
    const user = await a.kernel.services.users.create('alice', PASSWORD, 'operator')
    const enrolled = await enrollTwoFactor(a, user.id)
    const token = a.kernel.services.sessions.apiTokens.create(
      { id: user.id, role: 'operator' },
      { name: 'script', role: 'viewer', expiresAt: null, prefixes: null },
      null,
    ).secret
    const skill = await post(a, '/api/skills', {
      body: '---\nname: restore-me\ndescription: A skill that must survive\n---\n# Steps\n\n1. Back up.\n',
    })
    expect(skill.statusCode, skill.body).toBeLessThan(300)
    const repo = await repository(a, 'usb', { kind: 'local', path: join(work, 'repo') })
    const id = await job(a, { name: 'hostd', repositoryId: repo.repository.id })
    expect((await runJob(a, id)).json()).toMatchObject({ status: 'success' })
    await a.close()
    a = undefined

    // From the recovery kit alone, as the command line does.
    await writeFile(join(work, 'password'), repo.recoveryKit!.password, { mode: 0o600 })
    const fresh = join(work, 'fresh')
    const script = join(import.meta.dirname, '..', 'src', 'restore-hostd.ts')
    const out = await run(process.execPath, [
      script,
      '--repository',
      repo.repository.repository,
      '--password-file',
      join(work, 'password'),
      '--data-dir',
      fresh,
    ])
    expect(out.stdout).toMatch(/^restored hostd from snapshot [0-9a-f]{8}/)
    // Into a folder that is not empty: refused.
    await expect(
      restoreHostd(
        { repository: repo.repository.repository, passwordFile: join(work, 'password'), options: [], env: {} },
        fresh,
      ),
    ).rejects.toMatchObject({ code: 'HOSTD_BACKUPS_EXISTS' })

    b = await startTestKernel({ plugins: plugins(), env: { HOSTD_DATA_DIR: fresh } })
    // The harness names its users admin-1...: the restored database has those, so this admin gets a name of its own.
    const admin = { token: (await b.login('admin', 'admin-after-restore')).token }
    // The password and two-factor: step one gives a challenge, step two takes a code of the secret enrolled before.
    const login = await b.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: { username: 'alice', password: PASSWORD },
    })
    expect(login.json()).toMatchObject({ twoFactorRequired: true })
    const verified = await b.inject({
      method: 'POST',
      url: '/api/auth/login/verify',
      payload: {
        challenge: login.json().challenge,
        code: totp(enrolled.secret, Math.max(currentStep(), enrolled.step + 1)),
      },
    })
    expect(verified.statusCode, verified.body).toBe(200)
    // The API token.
    const me = await b.inject({ url: '/api/auth/me', as: { token } })
    expect(me.json()).toMatchObject({ username: 'alice' })
    // The skill.
    const list = await b.inject({ url: '/api/skills', as: admin })
    expect(list.body).toContain('restore-me')
    // Settings: this plugin's repository (its sealed password opens it: the key came back too).
    const snaps = await b.inject({ url: `/api/backups/repositories/${repo.repository.id}/snapshots`, as: admin })
    expect(snaps.statusCode, snaps.body).toBe(200)
    expect(snaps.json().items).toHaveLength(1)
  })
})
