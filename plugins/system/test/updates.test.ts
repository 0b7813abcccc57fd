import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto'
import { existsSync, readdirSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, readlink, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { c as tar } from 'tar'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { startHelper, type RunningHelper } from '../../../helper/test/start-helper.ts'
import { createSystemPlugin } from '../src/index.ts'
import { signedMessage } from '../src/updates.ts'

/**
 * Updates against a STAND-IN release feed: a loopback HTTP server playing the project's release site (which does
 * not exist here), signing with an Ed25519 key generated for the test. The restart goes to the real helper in
 * dry-run mode (it would restart hostd.service).
 */
interface FeedState {
  feed: Record<string, unknown>
  archive: Buffer
}

async function releaseArchive(dir: string, version: string): Promise<Buffer> {
  const tree = join(dir, `tree-${version}`)
  await mkdir(join(tree, 'kernel'), { recursive: true })
  await writeFile(join(tree, 'VERSION'), version)
  await writeFile(join(tree, 'kernel', 'main.ts'), `console.log('hostd ${version}')\n`)
  const chunks: Buffer[] = []
  for await (const chunk of tar({ gzip: true, cwd: tree }, ['VERSION', 'kernel'])) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

function signedFeed(version: string, archive: Buffer, key: KeyObject, url = `/hostd-${version}.tgz`) {
  const sha256 = createHash('sha256').update(archive).digest('hex')
  return { version, notes: `Release ${version}: faster and safer.`, url, sha256, signature: sign(null, signedMessage(version, sha256), key).toString('base64') }
}

describe('system plugin: updates (stand-in feed server)', () => {
  const releaseKey = generateKeyPairSync('ed25519')
  const otherKey = generateKeyPairSync('ed25519')
  const state: FeedState = { feed: {}, archive: Buffer.alloc(0) }
  let standInFeed: Server
  let feedUrl: string
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
    standInFeed = createServer((req, res) => {
      if (req.url === '/feed.json') res.setHeader('content-type', 'application/json').end(JSON.stringify(state.feed))
      else if (req.url?.endsWith('.tgz')) res.setHeader('content-type', 'application/gzip').end(state.archive)
      else res.writeHead(404).end()
    })
    await new Promise<void>((r) => standInFeed.listen(0, '127.0.0.1', r))
    feedUrl = `http://127.0.0.1:${(standInFeed.address() as { port: number }).port}/feed.json`
    goodArchive = await releaseArchive(dir, '99.0.0')
    state.feed = signedFeed('99.0.0', goodArchive, releaseKey.privateKey)
    state.archive = goodArchive
    helper = await startHelper({ dryRun: true })
    t = await startTestKernel({
      plugins: [createSystemPlugin({
        feedUrl, publicKeyPem: releaseKey.publicKey.export({ type: 'spki', format: 'pem' }).toString(), firstCheckDelayMs: 0, installDir,
      })],
      env: { HOSTD_HELPER_SOCKET: helper.socket },
    })
    currentVersion = (await t.inject({ url: '/api/version', as: 'viewer' })).json().version
  })
  afterAll(async () => {
    await t.close()
    await helper.stop()
    await new Promise((r) => standInFeed.close(r))
    await rm(dir, { recursive: true, force: true })
  })

  it('checks the feed on start: current and latest version, notes, checkedAt', async () => {
    let status: Record<string, unknown> = {}
    for (let i = 0; i < 100 && !status.checkedAt; i++) {
      status = (await t.inject({ url: '/api/updates', as: 'viewer' })).json()
      if (!status.checkedAt) await new Promise((r) => setTimeout(r, 50))
    }
    expect(status).toMatchObject({
      currentVersion, latestVersion: '99.0.0', updateAvailable: true, notes: 'Release 99.0.0: faster and safer.', error: null, state: 'idle',
    })
    expect(Date.parse(status.checkedAt as string)).not.toBeNaN()
  })

  it('answers 409 when the feed offers nothing newer, and installs nothing', async () => {
    state.feed = signedFeed(currentVersion, goodArchive, releaseKey.privateKey)
    const res = await install()
    expect([res.statusCode, res.json().error]).toEqual([409, 'HOSTD_UPDATE_NONE'])
    nothingInstalled()
    state.feed = signedFeed('99.0.0', goodArchive, releaseKey.privateKey)
  })

  it('refuses a release signed by another key, and changes nothing', async () => {
    state.feed = signedFeed('99.0.0', goodArchive, otherKey.privateKey)
    const res = await install()
    expect([res.statusCode, res.json().error]).toEqual([502, 'HOSTD_UPDATE_BAD_SIGNATURE'])
    nothingInstalled()
    expect(readdirSync(installDir)).toEqual([]) // no staging or download left behind
    const audit = (await t.inject({ url: '/api/audit?range=24h', as: 'admin' })).json().items
    expect(audit.find((e: { action: string }) => e.action === 'update.install')).toMatchObject({ result: 'failure', detail: { before: currentVersion, after: currentVersion, offered: '99.0.0' } })
  })

  it('refuses an archive whose SHA-256 differs from the signed one, and changes nothing', async () => {
    state.feed = signedFeed('99.0.0', goodArchive, releaseKey.privateKey)
    state.archive = await releaseArchive(dir, '99.0.0-evil')
    const res = await install()
    expect([res.statusCode, res.json().error]).toEqual([502, 'HOSTD_UPDATE_BAD_HASH'])
    nothingInstalled()
    expect(readdirSync(installDir)).toEqual([])
    state.archive = goodArchive
  })

  it('downloads, verifies, unpacks, switches current and restarts through the helper; then 503 while it finishes', async () => {
    const res = await install()
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toEqual({
      installed: '99.0.0', path: join(installDir, 'releases', '99.0.0'),
      restart: { action: 'daemon.restart', dryRun: true, argv: ['systemctl', 'restart', 'hostd.service'] },
    })
    expect(await readlink(join(installDir, 'current'))).toBe(join('releases', '99.0.0'))
    expect(await readFile(join(installDir, 'current', 'VERSION'), 'utf8')).toBe('99.0.0')
    expect((await helper.log()).findLast((e) => e.action === 'daemon.restart')).toMatchObject({ outcome: 'dry-run' })
    const audit = (await t.inject({ url: '/api/audit?range=24h', as: 'admin' })).json().items
    expect(audit.find((e: { action: string; result: string }) => e.action === 'update.install' && e.result === 'success'))
      .toMatchObject({ detail: { before: currentVersion, after: '99.0.0' } })

    const again = await install()
    expect([again.statusCode, again.json().error]).toEqual([503, 'HOSTD_UPDATE_IN_PROGRESS'])
    expect((await t.inject({ url: '/api/updates', as: 'viewer' })).json().state).toBe('restarting')
  })
})
