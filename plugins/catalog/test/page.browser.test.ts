/**
 * The catalog page in Debian's Chromium against the real daemon, a private dockerd and a local docker-registry
 * (plugins/containers/test/support/engine.ts). A catalog source folder holds an app that runs busybox httpd from
 * the registry. A viewer browses without install controls; an operator cannot install an app that needs an admin,
 * installs the web app through its form with live pull progress, finds it installed (the installed view lists
 * containers by the catalog's labels), fetches its page, gets a name conflict back at the field, and uninstalls
 * it with its volume. An admin manages sources.
 *
 * The registry sits behind a small gate (an HTTP proxy that holds image layer downloads until the test opens it),
 * so the progress the page shows while pulling is seen every time, not by chance on a fast machine.
 */
import { createServer, request, type Server } from 'node:http'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../../../test/support/browser.ts'
import {
  freePort,
  importTestImage,
  pushToRegistry,
  startEngine,
  startRegistry,
  type TestEngine,
  type TestRegistry,
} from '../../containers/test/support/engine.ts'
import { catalogFile } from './support.ts'

const MARKER = `catalog-page-${process.pid}-${Date.now()}`

interface Gate {
  address: string
  open(): void
  close(): Promise<void>
}

/** An HTTP proxy in front of the registry that holds blob (layer) downloads until `open()`. */
async function startGate(registry: string): Promise<Gate> {
  let release!: () => void
  const opened = new Promise<void>((resolve) => (release = resolve))
  const server: Server = createServer((req, res) => {
    const forward = () => {
      const upstream = request(
        `http://${registry}${req.url}`,
        { method: req.method, headers: { ...req.headers, host: registry } },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(res)
        },
      )
      upstream.on('error', () => res.destroy())
      req.pipe(upstream)
    }
    if (/\/blobs\/sha256:/.test(req.url ?? '') && req.method === 'GET') void opened.then(forward)
    else forward()
  })
  const port = await freePort()
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  return {
    address: `127.0.0.1:${port}`,
    open: release,
    close: () =>
      new Promise<void>((resolve) => {
        release()
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

describe('catalog page', { timeout: 300_000 }, () => {
  let engine: TestEngine
  let registry: TestRegistry
  let gate: Gate
  let ui: UiHarness
  let dir: string
  let extraDir: string
  const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
    ui.daemon.fetch(path, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${ui.adminToken}`, 'content-type': 'application/json' },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    })

  beforeAll(async () => {
    engine = await startEngine()
    registry = await startRegistry(engine.dir)
    await importTestImage(engine, 'hostd-test/catalog-page:1', MARKER)
    await pushToRegistry(engine, 'hostd-test/catalog-page:1', `${registry.address}/hostd-test/catalog-page:1`)
    gate = await startGate(registry.address)
    const image = `${gate.address}/hostd-test/catalog-page:1`
    // Only the registry has it: installing must pull, through the gate.
    await engine.docker('rmi', `${registry.address}/hostd-test/catalog-page:1`, 'hostd-test/catalog-page:1')
    dir = await mkdtemp(join(tmpdir(), 'hostd-catalog-page-'))
    extraDir = await mkdtemp(join(tmpdir(), 'hostd-catalog-extra-'))
    await writeFile(join(extraDir, 'more.json'), catalogFile([], 'More apps'))
    await writeFile(
      join(dir, 'apps.json'),
      catalogFile(
        [
          {
            id: 'test-web',
            version: '1.0.0',
            title: 'Test web server',
            tagline: 'A tiny web server for trying the catalog',
            description: 'Serves one page from its image with busybox httpd.\nIt keeps nothing but a small volume.',
            categories: ['Testing', 'Web'],
            developer: 'hostd tests',
            website: 'https://example.com/test-web',
            port: 8080,
            note: 'The page it serves is baked into the image.',
            defaultCredentials: { username: 'admin', password: 'changeme' },
            fields: [
              {
                key: 'webPort',
                label: 'Web port',
                type: 'port',
                required: true,
                description: 'The port of this server the page answers on.',
              },
              { key: 'greeting', label: 'Greeting', type: 'text', default: 'hello', pattern: '[a-z]+' },
              { key: 'secret', label: 'Secret', type: 'password' },
              {
                key: 'mode',
                label: 'Mode',
                type: 'select',
                options: [
                  { value: 'fast', label: 'Fast' },
                  { value: 'careful', label: 'Careful' },
                ],
                default: 'fast',
                required: true,
              },
              { key: 'verbose', label: 'Verbose logging', type: 'boolean', default: false },
            ],
            runSpec: {
              image,
              command: ['httpd', '-f', '-p', '8080', '-h', '/www'],
              ports: ['127.0.0.1:{{fields.webPort}}:8080'],
              volumes: ['test-web-data:/data'],
              env: {
                GREETING: '{{fields.greeting}}',
                SECRET: '{{fields.secret}}',
                MODE: '{{fields.mode}}',
                VERBOSE: '{{fields.verbose}}',
              },
            },
          },
          {
            id: 'host-site',
            version: '1.0.0',
            title: 'Host folder site',
            tagline: 'Serves a folder of this server',
            categories: ['Web'],
            fields: [
              { key: 'webPort', label: 'Web port', type: 'port', required: true },
              { key: 'site', label: 'Site folder', type: 'path', required: true },
            ],
            runSpec: {
              image,
              command: ['httpd', '-f', '-p', '8080', '-h', '/www'],
              ports: ['127.0.0.1:{{fields.webPort}}:8080'],
              volumes: ['{{fields.site}}:/www:ro'],
            },
          },
          { id: 'broken', title: 'An entry without a version', categories: ['Testing'], runSpec: { image } },
        ],
        'Test apps',
      ),
    )
    ui = await startUi({ builtinPlugins: true, env: { DOCKER_HOST: engine.host } })
    const added = await api('/api/catalog/sources', {
      method: 'POST',
      body: { kind: 'directory', location: dir, id: 'test' },
    })
    expect(added.status, await added.clone().text()).toBe(201)
    expect(await added.json()).toMatchObject({
      ok: true,
      apps: 2,
      skipped: [expect.objectContaining({ id: 'broken' })],
    })
  }, 240_000)

  afterAll(async () => {
    await ui?.close()
    await gate?.close()
    await registry?.stop()
    await engine?.stop()
    for (const d of [dir, extraDir]) if (d) await rm(d, { recursive: true, force: true })
  })

  it('shows a viewer the catalog, searchable and filtered, with no install controls', async () => {
    const page = await ui.open('viewer', '/catalog')
    await page.getByRole('heading', { name: 'App catalog', level: 1 }).waitFor()
    // In the page (the shell's navigation has a group named Apps too).
    const apps = page.getByRole('main').getByRole('list', { name: 'Apps' })
    await apps.getByRole('link', { name: 'Test web server' }).waitFor()
    await apps.getByRole('link', { name: 'Jellyfin' }).waitFor() // the built-in catalog
    await expectAccessible(page, 'catalog as viewer')
    await screenshot(page, 'catalog-apps')

    await page.getByRole('searchbox', { name: 'Search apps' }).fill('tiny web')
    await expect.poll(() => apps.getByRole('listitem').count()).toBe(1)
    expect(new URL(page.url()).searchParams.get('q')).toBe('tiny web')
    await page.getByRole('searchbox', { name: 'Search apps' }).fill('')
    await page.getByRole('combobox', { name: 'Category' }).selectOption('Testing')
    await expect.poll(() => apps.getByRole('listitem').count()).toBe(1)
    await page.getByRole('combobox', { name: 'Category' }).selectOption('Web')
    await expect.poll(() => apps.getByRole('listitem').count()).toBeGreaterThanOrEqual(2)
    await screenshot(page, 'catalog-filtered')

    await apps.getByRole('link', { name: 'Test web server' }).click()
    await page.getByRole('heading', { name: 'Test web server', level: 1 }).waitFor()
    expect(new URL(page.url()).pathname).toBe('/catalog/apps/test/test-web')
    await page.getByText('Installing needs the operator role.').waitFor()
    expect(await page.getByRole('button', { name: 'Install' }).count()).toBe(0)
    expect(await page.getByRole('link', { name: 'Install' }).count()).toBe(0)
    await page.getByText('changeme').waitFor() // the default credentials hint
    await page.getByText('A free port on this server (Web port).').waitFor()
    await expectAccessible(page, 'app detail as viewer')
    await screenshot(page, 'catalog-app-viewer')

    // Reload keeps the view (its own URL), and back returns to the grid.
    await page.reload()
    await page.getByRole('heading', { name: 'Test web server', level: 1 }).waitFor()
    await page.goBack()
    await page.getByRole('heading', { name: 'App catalog', level: 1 }).waitFor()

    await page.getByRole('tab', { name: /Sources/ }).click()
    await page.getByRole('heading', { name: 'Test apps' }).waitFor()
    expect(await page.getByRole('button', { name: /Add source|Refresh|Remove/ }).count()).toBe(0)
    ui.assertNoCspViolations()
  })

  it('lets an operator install the web app through its form with progress, and uninstall it', async () => {
    const operator = await ui.createUser('operator')
    const page = await ui.open(operator, '/catalog/apps/test/host-site')
    await page.getByRole('heading', { name: 'Host folder site', level: 1 }).waitFor()
    expect(await page.getByRole('button', { name: 'Install' }).isDisabled()).toBe(true)
    await page
      .getByText('Needs an admin: it mounts a folder of this server (Site folder).', { exact: false })
      .first()
      .waitFor()
    await screenshot(page, 'catalog-app-needs-admin')

    await page.goto(new URL('/catalog/apps/test/test-web', ui.url).href)
    await page.getByRole('link', { name: 'Install' }).click()
    await page.getByRole('heading', { name: 'Install Test web server', level: 1 }).waitFor()
    const form = page.getByRole('form', { name: 'Install Test web server' })
    // The browser's own checks first: the required port.
    await form.getByRole('button', { name: 'Install' }).click()
    await expect
      .poll(() => form.getByRole('spinbutton', { name: 'Web port' }).getAttribute('aria-invalid'))
      .toBe('true')
    await expectAccessible(page, 'install form')
    await screenshot(page, 'catalog-install-form')

    const port = await freePort()
    await form.getByRole('textbox', { name: 'Container name (optional)' }).fill('web-ui')
    await form.getByRole('spinbutton', { name: 'Web port' }).fill(String(port))
    await form.getByLabel('Secret (optional)').fill('s3cret')
    await form.getByRole('combobox', { name: 'Mode' }).selectOption('careful')
    await form.getByRole('checkbox', { name: 'Verbose logging' }).check()
    await form.getByRole('button', { name: 'Install' }).click()

    // The layers wait at the gate: the page shows the pull in progress.
    const layers = page.getByRole('list', { name: 'Image download' })
    await layers.getByRole('progressbar').first().waitFor({ timeout: 60_000 })
    await page.getByRole('listitem').filter({ hasText: 'Downloading the image, in progress' }).waitFor()
    await expectAccessible(page, 'install progress')
    await screenshot(page, 'catalog-install-progress')
    gate.open()

    const done = page.getByRole('heading', { name: 'Installed', level: 2 })
    await done.waitFor({ timeout: 120_000 })
    const open = page.getByRole('link', { name: 'Open the container web-ui' })
    const href = await open.getAttribute('href')
    expect(href).toMatch(/^\/containers\/[0-9a-f]{64}$/)
    const containerId = href!.split('/').pop()!
    await expectAccessible(page, 'install result')
    await screenshot(page, 'catalog-install-done')

    // It serves its page on the port chosen in the form, with the values from the form.
    let body = ''
    await expect
      .poll(
        async () =>
          (body = await fetch(`http://127.0.0.1:${port}/`).then(
            (r) => r.text(),
            () => '',
          )),
        { timeout: 60_000 },
      )
      .toContain(MARKER)
    const inspect = (await engine.api('GET', `/containers/${containerId}/json`)).json()
    expect(inspect.Config.Labels).toMatchObject({
      'dev.hostd.catalog.app': 'test-web',
      'dev.hostd.catalog.source': 'test',
    })
    expect(inspect.Config.Env).toEqual(
      expect.arrayContaining(['SECRET=s3cret', 'MODE=careful', 'VERBOSE=true', 'GREETING=hello']),
    )

    // Listed as from the catalog: the installed view reads the labels, and names the source (not its id).
    await page.getByRole('link', { name: 'All installed apps' }).click()
    const table = page.getByRole('table', { name: 'Apps installed from the catalog' })
    const row = table.getByRole('row').filter({ hasText: 'web-ui' })
    await row.getByText('running').waitFor()
    await row.getByRole('link', { name: 'Test web server', exact: true }).waitFor()
    await row.getByRole('cell', { name: 'Test apps', exact: true }).waitFor()
    const webUrl = `http://${new URL(ui.url).hostname}:${port}/`
    expect(await row.getByRole('link', { name: 'Open Test web server (web-ui)' }).getAttribute('href')).toBe(webUrl)
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth)).toBe(true)
    await expectAccessible(page, 'installed view')
    await screenshot(page, 'catalog-installed')

    // Its page leads with it installed: its state, Open (its web port, this server's address), Stop and Uninstall.
    await row.getByRole('link', { name: 'Test web server', exact: true }).click()
    await page.getByRole('heading', { name: 'Test web server', level: 1 }).waitFor()
    const header = page.locator('.page-header')
    const openApp = header.getByRole('link', { name: 'Open Test web server (web-ui)' })
    expect(await openApp.getAttribute('href')).toBe(webUrl)
    expect(await openApp.getAttribute('target')).toBe('_blank')
    expect(await header.getByRole('link', { name: 'Install' }).count()).toBe(0)
    await header.getByText('running', { exact: true }).waitFor()
    await page.getByText('Test apps', { exact: true }).waitFor() // the source, by its name
    await expectAccessible(page, 'installed app')
    await screenshot(page, 'catalog-app-installed')
    await ui.forward(port)
    const [tab] = await Promise.all([page.context().waitForEvent('page'), openApp.click()])
    await expect.poll(() => tab!.content(), { timeout: 30_000 }).toContain(MARKER)
    await tab!.close()
    await page.setViewportSize({ width: 390, height: 844 })
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth)).toBe(true)
    await screenshot(page, 'catalog-app-installed-phone')
    await page.setViewportSize({ width: 1280, height: 860 })

    // Stopped, there is nothing to open; started again, Open is back.
    await header.getByRole('button', { name: 'Stop web-ui' }).click()
    await header.getByText('exited', { exact: true }).waitFor({ timeout: 60_000 })
    expect(await openApp.count()).toBe(0)
    await header.getByRole('button', { name: 'Start web-ui' }).click()
    await openApp.waitFor({ timeout: 60_000 })

    // The overview's Apps card: the installed app, its state and Open.
    await page.goto(new URL('/', ui.url).href)
    const card = page.getByRole('list', { name: 'Installed apps' })
    const item = card.getByRole('listitem').filter({ hasText: 'Test web server (web-ui)' })
    await item.getByText('running').waitFor({ timeout: 30_000 })
    expect(await item.getByRole('link', { name: 'Open Test web server (web-ui)' }).getAttribute('href')).toBe(webUrl)
    await screenshot(page, 'catalog-overview-card')

    // A second install under the same name: the server's refusal shows at the name field.
    await page.goto(new URL('/catalog/apps/test/test-web/install', ui.url).href)
    const again = page.getByRole('form', { name: 'Install Test web server' })
    await again.getByRole('textbox', { name: 'Container name (optional)' }).fill('web-ui')
    await again.getByRole('spinbutton', { name: 'Web port' }).fill(String(await freePort()))
    await again.getByRole('button', { name: 'Install' }).click()
    const nameField = again.getByRole('textbox', { name: 'Container name (optional)' })
    await expect.poll(() => nameField.getAttribute('aria-invalid'), { timeout: 60_000 }).toBe('true')
    await again.getByText('A container named “web-ui” exists already', { exact: false }).waitFor()
    await screenshot(page, 'catalog-install-conflict')

    // Uninstall from the installed view, with its volume.
    await page.goto(new URL('/catalog/installed', ui.url).href)
    await table.getByRole('button', { name: 'Uninstall web-ui' }).click()
    const dialog = page.getByRole('dialog', { name: 'Uninstall web-ui?' })
    await dialog.getByRole('checkbox', { name: 'Also remove its volumes' }).check()
    await expectAccessible(page, 'uninstall dialog')
    await screenshot(page, 'catalog-uninstall')
    await dialog.getByRole('button', { name: 'Uninstall' }).click()
    await page.getByText('No app from the catalog is installed').waitFor({ timeout: 60_000 })
    expect((await engine.api('GET', `/containers/${containerId}/json`)).status).toBe(404)
    expect((await engine.api('GET', '/volumes/test-web-data')).status).toBe(404)
    ui.assertNoCspViolations()
  })

  it('lets an admin add, refresh and remove sources, with skipped entries and errors shown', async () => {
    const page = await ui.open('admin', '/catalog/sources')
    const test = page
      .getByRole('list', { name: 'Catalog sources' })
      .getByRole('listitem')
      .filter({ has: page.getByRole('heading', { name: 'Test apps' }) })
    await test.getByText('1 entry skipped').click()
    await test.getByText(/“broken”: .*version/).waitFor()
    await expectAccessible(page, 'sources')
    await screenshot(page, 'catalog-sources')

    await page.getByRole('button', { name: 'Add source' }).click()
    const dialog = page.getByRole('dialog', { name: 'Add a catalog source' })
    await dialog.getByRole('textbox', { name: 'Folder' }).fill(dir)
    await dialog.getByRole('button', { name: 'Add source' }).click()
    // The same folder again: the server's 409 at the field.
    await dialog.getByText(/already/).waitFor()
    await expect.poll(() => dialog.getByRole('textbox', { name: 'Folder' }).getAttribute('aria-invalid')).toBe('true')
    await dialog.getByRole('textbox', { name: 'Folder' }).fill(extraDir)
    await dialog.getByRole('textbox', { name: 'Id (optional)' }).fill('more')
    await expectAccessible(page, 'add source dialog')
    await dialog.getByRole('button', { name: 'Add source' }).click()
    const sources = page.getByRole('list', { name: 'Catalog sources' })
    const more = sources.getByRole('listitem').filter({ hasText: extraDir })
    await more.getByRole('heading', { name: 'More apps' }).waitFor()
    await more.getByText('0 apps').waitFor()

    // A source that cannot be read shows its error after a refresh.
    await rm(extraDir, { recursive: true, force: true })
    await more.getByRole('button', { name: 'Refresh More apps' }).click()
    await more.getByText('Error', { exact: true }).waitFor()
    await more.getByText(/ENOENT|no such|not found|missing/i).waitFor()
    await screenshot(page, 'catalog-sources-error')

    // Unread, it goes by its id.
    await more.getByRole('button', { name: 'Remove more' }).click()
    await page.getByRole('dialog', { name: 'Remove more?' }).getByRole('button', { name: 'Remove source' }).click()
    await expect.poll(() => sources.getByRole('listitem').filter({ hasText: extraDir }).count()).toBe(0)
    ui.assertNoCspViolations()
  })
})
