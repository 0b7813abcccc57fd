import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateKeyPairSync } from 'node:crypto'
import { existsSync, readdirSync } from 'node:fs'
import { mkdtemp, readFile, readlink, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { startHelper, type RunningHelper } from '../../../helper/test/start-helper.ts'
import { createSystemPlugin } from '../src/index.ts'
import { releaseArchive, signedFeed, startReleaseFeed, type ReleaseFeed } from './support/release-feed.ts'

/**
 * Updates against a STAND-IN release feed: a loopback HTTP server playing the project's release site (which does
 * not exist here), signing with an Ed25519 key generated for the test. The restart goes to the real helper in
 * dry-run mode (it would restart hostd.service).
 */
describe('system plugin: updates (stand-in feed server)', () => {
  const releaseKey = generateKeyPairSync('ed25519')
  const otherKey = generateKeyPairSync('ed25519')
  let standInFeed: ReleaseFeed
  let dir: string
  let installDir: string
  let helper: RunningHelper
  let t: TestKernel
  let goodArchive: Buffer
  let currentVersion: string

  const install = () => t.inject({ method: 'POST', url: '/api/updates/install', as: 'admin' })
  const nothingInstalled = () => expect(existsSync(join(installDir, 'current'))).toBe(false)

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hostd-updates-'))
    installDir = join(dir, 'app')
    standInFeed = await startReleaseFeed()
    goodArchive = await releaseArchive(dir, '99.0.0')
    standInFeed.state.feed = signedFeed('99.0.0', goodArchive, releaseKey.privateKey)
    standInFeed.state.archive = goodArchive
    helper = await startHelper({ dryRun: true })
    t = await startTestKernel({
      plugins: [
        createSystemPlugin({
          feedUrl: standInFeed.url,
          publicKeyPem: releaseKey.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
          firstCheckDelayMs: 0,
          installDir,
        }),
      ],
      env: { HOSTD_HELPER_SOCKET: helper.socket },
    })
    currentVersion = (await t.inject({ url: '/api/version', as: 'viewer' })).json().version
  })
  afterAll(async () => {
    await t.close()
    await helper.stop()
    await standInFeed.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('checks the feed on start: current and latest version, notes, checkedAt', async () => {
    let status: Record<string, unknown> = {}
    for (let i = 0; i < 100 && !status.checkedAt; i++) {
      status = (await t.inject({ url: '/api/updates', as: 'viewer' })).json()
      if (!status.checkedAt) await new Promise((r) => setTimeout(r, 50))
    }
    expect(status).toMatchObject({
      currentVersion,
      latestVersion: '99.0.0',
      updateAvailable: true,
      notes: 'Release 99.0.0: faster and safer.',
      error: null,
      state: 'idle',
    })
    expect(Date.parse(status.checkedAt as string)).not.toBeNaN()
  })

  it('answers 409 when the feed offers nothing newer, and installs nothing', async () => {
    standInFeed.state.feed = signedFeed(currentVersion, goodArchive, releaseKey.privateKey)
    const res = await install()
    expect([res.statusCode, res.json().error]).toEqual([409, 'HOSTD_UPDATE_NONE'])
    nothingInstalled()
    standInFeed.state.feed = signedFeed('99.0.0', goodArchive, releaseKey.privateKey)
  })

  it('refuses a release signed by another key, and changes nothing', async () => {
    standInFeed.state.feed = signedFeed('99.0.0', goodArchive, otherKey.privateKey)
    const res = await install()
    expect([res.statusCode, res.json().error]).toEqual([502, 'HOSTD_UPDATE_BAD_SIGNATURE'])
    nothingInstalled()
    expect(readdirSync(installDir)).toEqual([]) // no staging or download left behind
    const audit = (await t.inject({ url: '/api/audit?range=24h', as: 'admin' })).json().items
    expect(audit.find((e: { action: string }) => e.action === 'update.install')).toMatchObject({
      result: 'failure',
      detail: { before: currentVersion, after: currentVersion, offered: '99.0.0' },
    })
  })

  it('refuses an archive whose SHA-256 differs from the signed one, and changes nothing', async () => {
    standInFeed.state.feed = signedFeed('99.0.0', goodArchive, releaseKey.privateKey)
    standInFeed.state.archive = await releaseArchive(dir, '99.0.0-evil')
    const res = await install()
    expect([res.statusCode, res.json().error]).toEqual([502, 'HOSTD_UPDATE_BAD_HASH'])
    nothingInstalled()
    expect(readdirSync(installDir)).toEqual([])
    standInFeed.state.archive = goodArchive
  })

  it('downloads, verifies, unpacks, switches current and restarts through the helper; then 503 while it finishes', async () => {
    const res = await install()
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toEqual({
      installed: '99.0.0',
      path: join(installDir, 'releases', '99.0.0'),
      restart: { action: 'daemon.restart', dryRun: true, argv: ['systemctl', 'restart', 'hostd.service'] },
    })
    expect(await readlink(join(installDir, 'current'))).toBe(join('releases', '99.0.0'))
    expect(await readFile(join(installDir, 'current', 'VERSION'), 'utf8')).toBe('99.0.0')
    expect((await helper.log()).findLast((e) => e.action === 'daemon.restart')).toMatchObject({ outcome: 'dry-run' })
    const audit = (await t.inject({ url: '/api/audit?range=24h', as: 'admin' })).json().items
    expect(
      audit.find((e: { action: string; result: string }) => e.action === 'update.install' && e.result === 'success'),
    ).toMatchObject({ detail: { before: currentVersion, after: '99.0.0' } })

    const again = await install()
    expect([again.statusCode, again.json().error]).toEqual([503, 'HOSTD_UPDATE_IN_PROGRESS'])
    expect((await t.inject({ url: '/api/updates', as: 'viewer' })).json().state).toBe('restarting')
  })
})
