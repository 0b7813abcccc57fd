/**
 * The Plugins page (issue 28) in Debian's Chromium against a real daemon: every plugin with its state, a failed
 * third-party plugin's error with the file and line that threw, the navigation entry of a failed or disabled plugin
 * leading to its entry, uploading a packed plugin with the answer shown, disable, enable and remove with their
 * confirmations (a built-in plugin has no Remove; removal keeps its data folder unless asked to delete it too), and
 * a viewer who sees the list without any action. Driven by role and accessible name; checked with axe and saved as
 * screenshots.
 */
import { existsSync } from 'node:fs'
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { create as createTar } from 'tar'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { eventually, writePluginFolder } from '@hostd/sdk/testing'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../support/browser.ts'

const REPO_ROOT = join(import.meta.dirname, '..', '..')
const HELLO_DIR = join(REPO_ROOT, 'examples', 'hello-plugin')

/** A third-party plugin whose `setup` throws after an await: it is `failed`, with this file's line as the origin. */
const BROKEN_SOURCE = `import { definePlugin } from '@hostd/sdk'

export default definePlugin({
  id: 'broken',
  version: '1.2.3',
  kernel: '^1.0.0',
  ui: { pages: [{ path: '/broken', title: 'Broken page', icon: 'zap', module: 'ui/page.js', element: 'broken-page' }] },
  setup: async () => {
    await new Promise((resolve) => setTimeout(resolve, 10))
    throw new Error('the broken fixture gave up')
  },
})
`
const BROKEN_LINE = BROKEN_SOURCE.split('\n').findIndex((l) => l.includes('throw new Error')) + 1

type Json = Record<string, any>

describe('web UI: the Plugins page', { timeout: 180_000 }, () => {
  let ui: UiHarness
  let scratch: string
  let helloTgz: string
  let garbage: string

  const list = async (): Promise<Json[]> =>
    (
      await ui.daemon.fetch('/api/extensions', { headers: { authorization: `Bearer ${ui.adminToken}` } })
    ).json() as Promise<Json[]>
  const entry = async (id: string) => (await list()).find((e) => e.id === id)

  beforeAll(async () => {
    // One small built-in plugin (with a page), so the page shows a built-in entry without starting them all. In
    // development mode: a third-party page's module reloads in the open page when its files change.
    ui = await startUi({ env: { HOSTD_BUILTIN_PLUGINS: 'branding', HOSTD_DEV: '1' } })
    scratch = await mkdtemp(join(tmpdir(), 'hostd-plugin-manager-'))
    // What `npm pack` makes of the hello example: a gzipped tar with everything under package/.
    helloTgz = join(scratch, 'hostd-plugin-hello-1.0.0.tgz')
    await createTar({ gzip: true, cwd: HELLO_DIR, prefix: 'package', file: helloTgz, portable: true }, [
      'package.json',
      'src',
      'ui',
    ])
    garbage = join(scratch, 'not-a-plugin.tgz')
    await writeFile(garbage, 'this is not a tarball at all')

    const broken = join(ui.daemon.pluginsDir, 'broken')
    await writePluginFolder(broken, {
      name: 'hostd-plugin-broken',
      version: '1.2.3',
      files: {
        'src/index.ts': BROKEN_SOURCE,
        'ui/page.js': "customElements.define('broken-page', class extends HTMLElement {})\n",
      },
    })
    await cp(join(import.meta.dirname, 'fixtures', 'isolated-plugin'), join(ui.daemon.pluginsDir, 'isolated'), {
      recursive: true,
    })
    await eventually(
      async () => (await entry('broken'))?.state === 'failed' && (await entry('isolated'))?.state === 'active',
    )
  }, 120_000)
  /** The hello example as `version`, declaring outbound network: more than 1.0.0 was granted. */
  const packHelloAskingMore = async (version: string): Promise<string> => {
    const dir = join(scratch, `hello-${version}`)
    await cp(HELLO_DIR, dir, {
      recursive: true,
      filter: (src) => !src.includes('node_modules') && !src.endsWith('/test'),
    })
    const pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'))
    await writeFile(join(dir, 'package.json'), JSON.stringify({ ...pkg, version }))
    const source = await readFile(join(dir, 'src', 'index.ts'), 'utf8')
    await writeFile(
      join(dir, 'src', 'index.ts'),
      source.replace("version: '1.0.0',", `version: '${version}',\n  permissions: { network: true },`),
    )
    const file = join(scratch, `hostd-plugin-hello-${version}.tgz`)
    await createTar({ gzip: true, cwd: dir, prefix: 'package', file, portable: true }, ['package.json', 'src', 'ui'])
    return file
  }

  afterAll(async () => {
    await ui?.close()
    if (scratch) await rm(scratch, { recursive: true, force: true })
  })
  afterEach(() => ui.assertNoCspViolations())

  it('shows a viewer every plugin, a failed one with its file and line, and no action', async () => {
    const page = await ui.open('viewer', '/plugins')
    await page.getByRole('heading', { name: 'Plugins', level: 1 }).waitFor()
    const plugins = page.getByRole('list', { name: 'Plugins' })
    const broken = plugins.getByRole('listitem', { name: 'broken', exact: true })
    await broken.getByText('failed', { exact: true }).waitFor()
    await broken.getByText('the broken fixture gave up').waitFor()
    await broken.getByText('1.2.3').waitFor()
    const origin = await broken.locator('code').textContent()
    expect(origin).toBe(`src/index.ts:${BROKEN_LINE}`) // relative to its folder: no host path shown
    const branding = plugins.getByRole('listitem', { name: 'branding', exact: true })
    await branding.getByText('built-in').waitFor()
    const isolated = plugins.getByRole('listitem', { name: 'isolated', exact: true })
    await isolated.getByText('third-party').waitFor()
    await isolated.getByText('sandboxed, in its own process').waitFor()
    // Read-only: no install, no change.
    expect(await page.getByRole('heading', { name: 'Install a plugin' }).count()).toBe(0)
    for (const name of [/^Disable /, /^Enable /, /^Remove /, /^Trust /])
      expect(await page.getByRole('button', { name }).count()).toBe(0)
    await expectAccessible(page, 'plugins (viewer)')
    await screenshot(page, 'plugins-viewer')

    // The failed plugin's navigation entry leads to its entry here, not to "Page not found".
    await page.goto(`${ui.url}/`)
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: /^Broken page/ })
      .click()
    await page.waitForURL(/\/plugins#broken$/)
    await eventually(async () => page.evaluate(() => document.activeElement?.id === 'plugin-broken'))
    // Its page's address says why it is not there, and leads to the same entry.
    await page.goto(`${ui.url}/broken`)
    await page.getByText('The plugin of this page failed to load').waitFor()
    await page.getByRole('button', { name: 'See it on the Plugins page' }).click()
    await page.waitForURL(/\/plugins#broken$/)
    await page.close()
  })

  it('lets an admin upload a plugin, disable, enable and remove it; a built-in one has no Remove', async () => {
    await rm(join(ui.daemon.pluginsDir, 'hello'), { recursive: true, force: true })
    const page = await ui.open('admin', '/plugins')
    const plugins = page.getByRole('list', { name: 'Plugins' })
    const branding = plugins.getByRole('listitem', { name: 'branding', exact: true })
    await branding.getByRole('button', { name: 'Disable branding' }).waitFor()
    expect(await branding.getByRole('button', { name: /^Remove/ }).count()).toBe(0)
    expect(await branding.getByRole('button', { name: /^Trust/ }).count()).toBe(0)

    // A file that is no plugin: the error, with its code.
    await page.getByLabel('Plugin package').setInputFiles(garbage)
    await page.getByRole('alert').getByText('not-a-plugin.tgz was not installed').waitFor()
    await page.getByText(/HOSTD_PLUGIN_[A-Z_]+/).waitFor()

    // The packed hello example: what was installed and what it was granted.
    await page.getByLabel('Plugin package').setInputFiles(helloTgz)
    const answer = page.getByRole('status').filter({ hasText: 'Installed hello 1.0.0: active' })
    await answer.waitFor()
    await answer.getByText('It was granted what it declares').waitFor()
    const hello = plugins.getByRole('listitem', { name: 'hello', exact: true })
    await hello.getByText('active', { exact: true }).waitFor()
    expect((await entry('hello'))?.state).toBe('active')
    // Its routes with their methods and roles, and its socket.
    const endpoints = hello.getByRole('list', { name: 'Routes and sockets of hello' })
    const route = endpoints.getByRole('listitem').filter({ has: page.getByText('/api/hello', { exact: true }) })
    await route.getByText('GET', { exact: true }).waitFor()
    await route.getByText('viewer').waitFor()
    const socket = endpoints.getByRole('listitem').filter({ hasText: '/api/hello/echo' })
    await socket.getByText('WS', { exact: true }).waitFor()
    expect(await endpoints.getByRole('listitem').count()).toBe(
      ((await entry('hello'))?.routes.length ?? 0) + ((await entry('hello'))?.sockets.length ?? 0),
    )
    const nav = page.getByRole('navigation', { name: 'Main' })
    await nav.getByRole('link', { name: 'Hello', exact: true }).waitFor()
    await expectAccessible(page, 'plugins (admin)')
    await screenshot(page, 'plugins-admin')

    // Disable, after a confirmation: its page becomes an entry that leads here.
    await hello.getByRole('button', { name: 'Disable hello' }).click()
    const dialog = page.getByRole('dialog', { name: 'Disable hello?' })
    await dialog.getByRole('button', { name: 'Disable plugin' }).click()
    await hello.getByText('disabled', { exact: true }).waitFor()
    expect((await entry('hello'))?.state).toBe('disabled')
    await nav.getByRole('link', { name: /^Hello\s*off$/ }).waitFor()
    expect(await nav.getByRole('link', { name: /^Hello\s*off$/ }).getAttribute('href')).toBe('/plugins#hello')

    await hello.getByRole('button', { name: 'Enable hello' }).click()
    await hello.getByText('active', { exact: true }).waitFor()
    expect((await entry('hello'))?.state).toBe('active')

    // Trust is explained before anything happens; cancelled here.
    await hello.getByRole('button', { name: 'Trust hello' }).click()
    const trust = page.getByRole('dialog', { name: 'Trust hello?' })
    await trust.getByText(/with the daemon's full power/).waitFor()
    await trust.getByRole('button', { name: 'Cancel' }).click()
    expect((await entry('hello'))?.trusted).toBe(false)

    // Remove says what it keeps, and keeps it unless asked: its data folder (made when its sandbox started).
    const dataFolder = join(ui.daemon.dataDir, 'plugin-data', 'hello')
    expect(existsSync(dataFolder)).toBe(true)
    await hello.getByRole('button', { name: 'Remove hello' }).click()
    const remove = page.getByRole('dialog', { name: 'Remove hello?' })
    await remove.getByText(/its data folder on the server/).waitFor()
    const alsoDelete = remove.getByRole('checkbox', { name: /^Also delete its data/ })
    expect(await alsoDelete.isChecked()).toBe(false)
    await expectAccessible(page, 'remove confirmation')
    await screenshot(page, 'plugins-remove')
    await remove.getByRole('button', { name: 'Remove plugin' }).click()
    await page.getByText('hello was removed; kept: its data folder').waitFor()
    await hello.waitFor({ state: 'detached' })
    expect(await entry('hello')).toBeUndefined()
    expect(existsSync(join(ui.daemon.pluginsDir, 'hello'))).toBe(false)
    await nav.getByRole('link', { name: /^Hello/ }).waitFor({ state: 'detached' })
    expect(existsSync(dataFolder)).toBe(true)

    // Installed again (it finds its data folder), then removed with its data.
    await writeFile(join(dataFolder, 'left-behind.txt'), 'from the first install')
    await page.getByLabel('Plugin package').setInputFiles(helloTgz)
    await hello.getByText('active', { exact: true }).waitFor()
    expect(existsSync(join(dataFolder, 'left-behind.txt'))).toBe(true)
    await hello.getByRole('button', { name: 'Remove hello' }).click()
    await remove.getByRole('checkbox', { name: /^Also delete its data/ }).check()
    await screenshot(page, 'plugins-remove-data')
    await remove.getByRole('button', { name: 'Remove plugin' }).click()
    await page.getByText('hello was removed; deleted: its data folder').waitFor()
    await hello.waitFor({ state: 'detached' })
    expect(await entry('hello')).toBeUndefined()
    expect(existsSync(dataFolder)).toBe(false)
    expect(existsSync(join(ui.daemon.dataDir, 'plugin-data'))).toBe(true)
    await page.close()
  })

  it('shows what an upgrade asks for beyond the grant, and activates it once an admin approves', async () => {
    await rm(join(ui.daemon.pluginsDir, 'hello'), { recursive: true, force: true })
    await eventually(async () => (await entry('hello')) === undefined)
    const installed = await ui.daemon.fetch('/api/extensions/install', {
      method: 'POST',
      headers: { authorization: `Bearer ${ui.adminToken}`, 'content-type': 'application/gzip' },
      body: await readFile(helloTgz),
    })
    expect(installed.status).toBe(201)
    const upgrade = await packHelloAskingMore('1.1.0')
    const page = await ui.open('admin', '/plugins')
    await page.getByLabel('Plugin package').setInputFiles(upgrade)
    await page.getByRole('status').filter({ hasText: 'hello 1.1.0 is waiting for approval' }).waitFor()
    const hello = page.getByRole('list', { name: 'Plugins' }).getByRole('listitem', { name: 'hello', exact: true })
    await hello.getByText('Version 1.1.0 is waiting for approval.').waitFor()
    await hello.getByText('1.0.0', { exact: true }).waitFor()
    expect((await entry('hello'))?.approval?.asks.network).toBe(true)
    await expectAccessible(page, 'plugins (approval)')
    await screenshot(page, 'plugins-approval')

    await hello.getByRole('button', { name: 'Approve hello 1.1.0' }).click()
    const dialog = page.getByRole('dialog', { name: 'Approve hello 1.1.0?' })
    await dialog.getByText('Outbound network').waitFor()
    await dialog.getByRole('button', { name: 'Approve and activate' }).click()
    await hello.getByText('1.1.0', { exact: true }).waitFor()
    await hello.getByText('Version 1.1.0 is waiting for approval.').waitFor({ state: 'detached' })
    const after = await entry('hello')
    expect(after?.version).toBe('1.1.0')
    expect(after?.approval).toBeUndefined()
    expect(after?.permissions?.network).toBe(true)
    await page.close()
  })

  it('holds a first install that asks for network until an admin approves it, showing what it asks for', async () => {
    const dir = join(scratch, 'asker')
    await writePluginFolder(dir, {
      name: 'hostd-plugin-asker',
      entry: 'src/index.js',
      files: {
        'src/index.js': `import { definePlugin } from '@hostd/sdk'
export default definePlugin({
  id: 'asker',
  version: '1.0.0',
  kernel: '^1.2.0',
  description: 'Asks for outbound network before it first runs.',
  permissions: { network: true },
  routes: (r) => {
    r.get('/api/asker', { role: 'viewer' }, () => ({ asked: true }))
    r.post('/api/asker/fetch', { role: 'operator' }, () => ({ fetched: true }))
  },
  sockets: (s) => {
    s.ws('/api/asker/live', { role: 'viewer' }, (socket) => socket.close())
  },
})
`,
      },
    })
    const tgz = join(scratch, 'hostd-plugin-asker-1.0.0.tgz')
    await createTar({ gzip: true, cwd: dir, prefix: 'package', file: tgz, portable: true }, ['package.json', 'src'])
    const page = await ui.open('admin', '/plugins')
    await page.getByLabel('Plugin package').setInputFiles(tgz)
    await page.getByRole('status').filter({ hasText: 'asker 1.0.0 is installed and waits for your approval' }).waitFor()
    const asker = page.getByRole('list', { name: 'Plugins' }).getByRole('listitem', { name: 'asker', exact: true })
    await asker.getByText('Version 1.0.0 is installed and waits for approval before it first runs.').waitFor()
    await asker.getByText('unavailable', { exact: true }).waitFor()
    await asker.getByText('known once it runs').waitFor()
    await asker.getByRole('button', { name: 'Remove asker without running it' }).waitFor()
    expect(await entry('asker')).toMatchObject({ state: 'unavailable', approval: { granted: null, version: '1.0.0' } })
    const route = await ui.daemon.fetch('/api/asker', { headers: { authorization: `Bearer ${ui.adminToken}` } })
    expect(route.status).toBe(404)
    await expectAccessible(page, 'plugins (held first install)')
    await asker.scrollIntoViewIfNeeded()
    await screenshot(page, 'plugins-held-install')

    await asker.getByRole('button', { name: 'Approve asker 1.0.0' }).click()
    const dialog = page.getByRole('dialog', { name: 'Approve asker 1.0.0?' })
    await dialog.getByText('It starts at once, granted what it asks for:').waitFor()
    await dialog.getByRole('button', { name: 'Approve and activate' }).click()
    await asker.getByText('active', { exact: true }).waitFor()
    const endpoints = asker.getByRole('list', { name: 'Routes and sockets of asker' })
    await endpoints.getByRole('listitem').filter({ hasText: '/api/asker/fetch' }).getByText('operator').waitFor()
    await endpoints.getByRole('listitem').filter({ hasText: '/api/asker/live' }).getByText('WS').waitFor()
    expect((await entry('asker'))?.approval).toBeUndefined()
    // The install's answer above follows: approved, it no longer says it waits.
    await page.getByRole('status').filter({ hasText: 'Installed asker 1.0.0: active' }).waitFor()
    expect(await page.getByRole('status').filter({ hasText: 'waits for your approval' }).count()).toBe(0)
    await asker.scrollIntoViewIfNeeded()
    await screenshot(page, 'plugins-routes')
    await page.close()

    // A viewer sees the routes too, and no action.
    const viewer = await ui.open('viewer', '/plugins#asker')
    const seen = viewer.getByRole('list', { name: 'Plugins' }).getByRole('listitem', { name: 'asker', exact: true })
    await seen.getByRole('list', { name: 'Routes and sockets of asker' }).getByText('/api/asker/fetch').waitFor()
    expect(await seen.getByRole('button').count()).toBe(0)
    await screenshot(viewer, 'plugins-routes-viewer')
    await viewer.close()
  })

  it("reloads an open page's module when its files change, in development mode, without reloading the shell", async () => {
    const page = await ui.open('admin', '/isolated')
    const frame = page.frameLocator('iframe[title="Isolated"]')
    await frame.getByRole('heading', { name: 'Isolated page' }).waitFor()
    await page.evaluate(() => {
      ;(window as unknown as { marker: string }).marker = 'the same document'
    })
    const file = join(ui.daemon.pluginsDir, 'isolated', 'ui', 'page.js')
    await writeFile(
      file,
      (await readFile(file, 'utf8')).replace('title="Isolated page"', 'title="Isolated page, edited"'),
    )
    await frame.getByRole('heading', { name: 'Isolated page, edited' }).waitFor({ timeout: 20_000 })
    // Neither reloaded nor navigated: the shell's document is the one the marker was set in.
    expect(await page.evaluate(() => (window as unknown as { marker?: string }).marker)).toBe('the same document')
    expect(new URL(page.url()).pathname).toBe('/isolated')
    await screenshot(page, 'plugins-dev-reload')
    await page.close()
  })
})
