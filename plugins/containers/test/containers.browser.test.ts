/**
 * The containers pages in a real browser against a real engine and a local registry: an operator runs busybox httpd
 * from the form (pulled with live layer progress), sees it in the list with a working port link, follows its log
 * live, stops and removes it; a viewer sees no Run or action buttons and a forged request is still 403; an admin
 * gets the advanced fields and runs a host-path volume that an operator is refused at the field; an update with
 * live progress, then one that is rolled back. axe on every view, screenshots of each.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventually } from '@hostd/sdk/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectAccessible, gotoRetrying, screenshot } from '../../../test/support/browser.ts'
import { BUSYBOX_LINKS, freePort, importTestImage, pushToRegistry } from './support/engine.ts'
import { holdSocketMessage, startContainersUi, toTop, type ContainersUi } from './support/browser.ts'

describe('containers pages', { timeout: 240_000 }, () => {
  let env: ContainersUi
  let ref: string
  const other = 'hostd-test/other:1'

  let index: Server

  beforeAll(async () => {
    // A stand-in for Docker Hub's search index (unreachable here); "offline" answers as an index that is down.
    index = createServer((req, res) => {
      const q = new URL(req.url!, 'http://x').searchParams.get('q') ?? ''
      if (q === 'offline') return res.writeHead(503).end()
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          num_results: 1,
          query: q,
          results: [{ name: q, description: `The ${q} image`, star_count: 42, is_official: true, is_automated: false }],
        }),
      )
    })
    await new Promise<void>((resolve) => index.listen(0, '127.0.0.1', resolve))
    env = await startContainersUi({
      env: { HOSTD_REGISTRY_INDEX_URL: `http://127.0.0.1:${(index.address() as AddressInfo).port}` },
    })
    ref = `${env.registry.address}/ui/web:1`
    await importTestImage(env.engine, 'hostd-test/web:1', 'hello from the browser test')
    await pushToRegistry(env.engine, 'hostd-test/web:1', ref)
    // Gone from the engine, so running it pulls every layer from the registry (with progress).
    await env.engine.docker('rmi', ref, 'hostd-test/web:1')
    // Another image (its own layer) for the containers that are not about pulling.
    await importTestImage(env.engine, other, 'another image')
  }, 180_000)
  afterAll(async () => {
    await env?.close()
    index?.close()
  })

  const containerNames = async () =>
    ((await env.engine.api('GET', '/containers/json?all=1')).json() as { Names: string[] }[]).map((c) =>
      c.Names[0]!.replace(/^\//, ''),
    )

  it('as operator: runs httpd from the form with pull progress, sees it running, follows its log, stops and removes it', async () => {
    const { ui } = env
    const page = await ui.open('operator', '/containers')
    await page.getByRole('heading', { name: 'Containers', level: 1 }).waitFor()
    await page.getByText('No containers yet').waitFor()
    await page.getByRole('button', { name: 'Run', exact: true }).click()
    await page.getByRole('heading', { name: 'Run a container' }).waitFor()
    expect(new URL(page.url()).pathname).toBe('/containers/run')
    // Operators do not get the fields that reach the host; a note says who can set them.
    expect(await page.getByRole('textbox', { name: 'Entrypoint' }).count()).toBe(0)
    expect(await page.getByRole('textbox', { name: 'Mounts' }).count()).toBe(0)
    await page.getByText('can be set by an admin').waitFor()
    await expectAccessible(page, 'run form (operator)')
    await toTop(page)
    await screenshot(page, 'containers-run-operator')

    const port = await freePort()
    await page.getByRole('textbox', { name: 'Image' }).fill(ref)
    await page.getByRole('textbox', { name: 'Name' }).fill('web')
    await page
      .getByRole('textbox', { name: 'Command' })
      .fill(`sh -c 'echo hello from the log; httpd -f -v -p 8080 -h /www'`)
    await page.getByRole('button', { name: 'Add port' }).click()
    await page.getByRole('textbox', { name: 'Host port 1' }).fill(`127.0.0.1:${port}`)
    await page.getByRole('textbox', { name: 'Container port 1' }).fill('8080')
    // Hold the "created" message: the page stays on the finished pull while the screenshot is taken.
    const hold = await holdSocketMessage(page, /\/api\/containers\/install$/, (m) => m.includes('"type":"created"'))
    await page.getByRole('button', { name: 'Run', exact: true }).click()
    await hold.reached
    const layers = page.getByRole('list', { name: `Layers of ${ref}` })
    await layers.waitFor()
    await expect.poll(() => layers.getByRole('progressbar').count(), { timeout: 20_000 }).toBeGreaterThan(0)
    await page.getByText(`Pull ${ref}`).waitFor()
    await expectAccessible(page, 'install progress')
    await toTop(page)
    await screenshot(page, 'containers-install-progress')
    hold.release()

    // Success opens the new container.
    await page.getByRole('heading', { name: 'web', level: 1 }).waitFor({ timeout: 60_000 })
    expect(new URL(page.url()).pathname).toBe('/containers/web')
    const log = page.getByRole('log', { name: 'Log of web' })
    await log.getByText('hello from the log').waitFor({ timeout: 30_000 })
    // The published port answers, and the request shows in the log while it is followed. The log's first line comes
    // before httpd listens: until it does, the engine's port proxy accepts and resets.
    const body = await eventually(async () => {
      try {
        return await (await fetch(`http://127.0.0.1:${port}/`)).text()
      } catch {
        return null
      }
    })
    expect(body).toContain('hello from the browser test')
    await log.getByText(/response:200/).waitFor({ timeout: 30_000 })
    // Live stats: two samples give a processor figure.
    await page.getByText(/% of one core/).waitFor({ timeout: 30_000 })
    await expectAccessible(page, 'container detail')
    await toTop(page)
    await screenshot(page, 'containers-detail')

    await page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: 'Containers' }).click()
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'web', exact: true }) })
    await row.getByText('running').waitFor()
    const portLink = row.getByRole('link', { name: `127.0.0.1:${port} → 8080 (port ${port} of web, opens a new tab)` })
    expect(await portLink.getAttribute('href')).toBe(`http://127.0.0.1:${port}/`)
    await expectAccessible(page, 'containers list')
    await screenshot(page, 'containers-list')

    await row.getByRole('button', { name: 'Stop web' }).click()
    await row.getByText('exited').waitFor({ timeout: 60_000 })
    await row.getByRole('button', { name: 'Remove web' }).click()
    const dialog = page.getByRole('dialog', { name: 'Remove web?' })
    await dialog.getByRole('button', { name: 'Remove container' }).click()
    await page.getByText('No containers yet').waitFor({ timeout: 30_000 })
    expect(await containerNames()).not.toContain('web')
    ui.assertNoCspViolations()
    await page.context().close()
  })

  it('as viewer: no Run or action buttons, and a forged request with the session and origin is still 403', async () => {
    await env.engine.api('DELETE', '/containers/idle?force=1') // a retry starts from the same state
    const created = await env.adminApi('POST', '/api/containers', { image: other, name: 'idle', command: 'sleep 3600' })
    expect(created.status).toBe(201)
    const page = await env.ui.open('viewer', '/containers')
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'idle', exact: true }) })
    await row.getByText('running').waitFor()
    expect(await page.getByRole('button', { name: 'Run', exact: true }).count()).toBe(0)
    for (const name of ['Stop idle', 'Restart idle', 'Kill idle', 'Remove idle'])
      expect(await page.getByRole('button', { name }).count()).toBe(0)
    expect(await page.getByRole('switch', { name: 'Start idle automatically' }).count()).toBe(0)
    await expectAccessible(page, 'containers list (viewer)')
    await screenshot(page, 'containers-list-viewer')

    await row.getByRole('link', { name: 'idle', exact: true }).click()
    await page.getByRole('heading', { name: 'idle', level: 1 }).waitFor()
    await page.getByRole('log', { name: 'Log of idle' }).waitFor()
    for (const name of ['Stop', 'Restart', 'Kill', 'Remove', 'Upload icon'])
      expect(await page.getByRole('button', { name, exact: true }).count()).toBe(0)
    await expectAccessible(page, 'container detail (viewer)')

    const forged = await page.evaluate(async () => {
      const post = async (path: string, body?: unknown) => {
        const res = await fetch(path, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
        return { status: res.status, error: ((await res.json()) as { error: string }).error }
      }
      return [
        await post('/api/containers/idle/stop'),
        await post('/api/containers', { image: 'busybox', name: 'forged' }),
        await post('/api/containers/idle/remove', { force: true }),
      ]
    })
    expect(forged).toEqual(Array(3).fill({ status: 403, error: 'HOSTD_AUTH_FORBIDDEN' }))
    // The install socket refuses a viewer too (the browser sends the cookie and the page's origin).
    const socketClose = await page.evaluate(
      () =>
        new Promise<number>((resolve) => {
          const ws = new WebSocket(`wss://${location.host}/api/containers/install`)
          ws.onopen = () => ws.send(JSON.stringify({ image: 'busybox', name: 'forged' }))
          ws.onclose = (e) => resolve(e.code)
        }),
    )
    expect(socketClose).not.toBe(1000)
    const state = (await env.engine.api('GET', '/containers/idle/json')).json().State
    expect(state.Running).toBe(true)
    expect(await containerNames()).not.toContain('forged')
    env.ui.assertNoCspViolations()
    await page.context().close()
    await env.adminApi('POST', '/api/containers/idle/remove', { force: true })
  })

  it('as admin the advanced fields are there and a host-path volume works; an operator is refused at the field', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hostd-ui-volume-'))
    const marker = `a file from the host ${Date.now()}`
    await writeFile(join(dir, 'hello.txt'), `${marker}\n`)
    try {
      const operator = await env.ui.open('operator', '/containers/run')
      await operator.getByRole('textbox', { name: 'Image' }).fill(other)
      await operator.getByRole('textbox', { name: 'Name' }).fill('files-operator')
      // A host folder is refused at the row as it is typed (the server's role rules refuse it too: containers.test.ts).
      await operator.getByRole('button', { name: 'Add volume' }).click()
      await operator.getByRole('textbox', { name: 'Volume 1: volume name' }).fill(dir)
      await operator.getByRole('textbox', { name: 'Volume 1: path inside' }).fill('/data')
      const volumes = operator.getByRole('textbox', { name: 'Volume 1: volume name' })
      expect(await volumes.getAttribute('aria-invalid')).toBe('true')
      const describedBy = (await volumes.getAttribute('aria-describedby'))!.split(' ')
      const description = await operator.locator(`[id="${describedBy[0]}"]`).textContent()
      expect(description).toContain('A host folder needs an admin')
      await operator.getByRole('button', { name: 'Run', exact: true }).click()
      await operator
        .getByRole('alert')
        .getByText(/Volume 1: A host folder needs an admin/)
        .waitFor()
      expect(await containerNames()).not.toContain('files-operator')
      await expectAccessible(operator, 'run form refused (operator)')
      await toTop(operator)
      await screenshot(operator, 'containers-run-refused')
      await operator.context().close()

      const admin = await env.ui.open('admin', '/containers/run')
      await admin.getByRole('heading', { name: 'Run a container' }).waitFor()
      for (const name of [
        'Entrypoint',
        'User',
        'Added capabilities',
        'DNS servers',
        'Mounts',
        'tmpfs',
        'Devices',
        'Extra docker run flags',
      ]) {
        await admin.getByRole('textbox', { name, exact: true }).waitFor()
      }
      expect(await admin.getByText('can be set by an admin').count()).toBe(0)
      // The registry search helps with the image field, and says so plainly when the index is down.
      await admin.getByRole('button', { name: 'Search the registry' }).click()
      const search = admin.getByRole('dialog', { name: 'Search the registry' })
      await search.getByRole('textbox', { name: 'Search term' }).fill('offline')
      await search.getByRole('button', { name: 'Search', exact: true }).click()
      await search.getByText('Registry search is not available here').waitFor()
      await search.getByRole('textbox', { name: 'Search term' }).fill('busybox')
      await search.getByRole('button', { name: 'Search', exact: true }).click()
      await search.getByRole('list', { name: 'Search results' }).getByText('The busybox image').waitFor()
      await expectAccessible(admin, 'registry search')
      await search.getByRole('button', { name: 'Use busybox' }).click()
      // Until the dialog has closed the page under it is inert: what is typed there would go nowhere.
      await search.waitFor({ state: 'hidden' })
      expect(await admin.getByRole('textbox', { name: 'Image' }).inputValue()).toBe('busybox')
      await admin.getByRole('textbox', { name: 'Image' }).fill(other)
      expect(await admin.getByRole('textbox', { name: 'Image' }).inputValue()).toBe(other)
      await admin.getByRole('textbox', { name: 'Name' }).fill('files')
      await admin.getByRole('textbox', { name: 'Command' }).fill(`sh -c 'cat /data/hello.txt; sleep 3600'`)
      await admin.getByRole('button', { name: 'Add volume' }).click()
      await admin.getByRole('textbox', { name: 'Volume 1: volume name or host folder' }).fill(dir)
      await admin.getByRole('textbox', { name: 'Volume 1: path inside' }).fill('/data')
      await admin.getByRole('checkbox', { name: 'Read-only (volume 1)' }).check()
      await expectAccessible(admin, 'run form (admin)')
      await toTop(admin)
      await screenshot(admin, 'containers-run-admin')
      await admin.getByRole('button', { name: 'Run', exact: true }).click()
      await admin.getByRole('heading', { name: 'files', level: 1 }).waitFor({ timeout: 60_000 })
      await admin.getByRole('log', { name: 'Log of files' }).getByText(marker).waitFor({ timeout: 30_000 })
      const mounts = (await env.engine.api('GET', '/containers/files/json')).json().Mounts as {
        Source: string
        RW: boolean
      }[]
      expect(mounts).toEqual([expect.objectContaining({ Source: dir, RW: false })])
      env.ui.assertNoCspViolations()
      await admin.context().close()
      await env.adminApi('POST', '/api/containers/files/remove', { force: true })
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('as operator: updates a container with live progress, then shows a rollback', async () => {
    const { engine, registry } = env
    const app = `${registry.address}/ui/app:1`
    const imageId = async (r: string) => (await engine.api('GET', `/images/${r}/json`)).json().Id as string
    await engine.api('DELETE', '/containers/app?force=1') // a retry starts from the same state
    await importTestImage(engine, 'hostd-test/app:v1', 'version one')
    await pushToRegistry(engine, 'hostd-test/app:v1', app)
    const v1 = await imageId(app)
    expect(
      (await env.adminApi('POST', '/api/containers', { image: app, name: 'app', command: 'httpd -f -p 8080 -h /www' }))
        .status,
    ).toBe(201)
    // A newer image in the registry, not on the engine (so the update pulls its layer with progress).
    await importTestImage(engine, 'hostd-test/app:v2', 'version two')
    await pushToRegistry(engine, 'hostd-test/app:v2', app)
    const v2 = await imageId(app)
    await engine.docker('tag', v1, app)
    // By id: its tag and the registry digest reference go, so nothing of it stays on the engine.
    await engine.docker('rmi', '-f', v2)

    const page = await env.ui.open('operator', '/containers')
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'app', exact: true }) })
    await row.getByText('Update available').waitFor({ timeout: 60_000 })
    await page.getByRole('button', { name: 'Update (1)' }).click()
    await page.getByRole('heading', { name: 'Update containers' }).waitFor()
    expect(await page.getByRole('checkbox', { name: 'app' }).isChecked()).toBe(true)
    await expectAccessible(page, 'updates')
    await screenshot(page, 'containers-updates')

    const hold = await holdSocketMessage(page, /\/api\/containers\/update$/, (m) => m.includes('"step":"recreate"'))
    await page.getByRole('button', { name: 'Update app' }).click()
    await hold.reached
    await page.getByRole('list', { name: 'Layers for app' }).getByRole('progressbar').first().waitFor()
    await expectAccessible(page, 'update progress')
    await screenshot(page, 'containers-update-progress')
    hold.release()
    await page.getByRole('heading', { name: 'Update finished' }).waitFor({ timeout: 90_000 })
    await page.getByText('Updated', { exact: true }).waitFor()
    expect((await engine.api('GET', '/containers/app/json')).json().Image).toBe(v2)
    await screenshot(page, 'containers-update-done')

    // An image whose command is missing: the new container cannot start, the old one is put back.
    await importTestImage(
      engine,
      'hostd-test/app:broken',
      'broken',
      '["/bin/sh"]',
      BUSYBOX_LINKS.filter((l) => l !== 'httpd'),
    )
    await pushToRegistry(engine, 'hostd-test/app:broken', app)
    await engine.docker('tag', v2, app)
    await page.getByRole('button', { name: 'Update others' }).click()
    await page.getByRole('checkbox', { name: /Show all containers/ }).check()
    await page.getByRole('checkbox', { name: 'app' }).check()
    await page.getByRole('button', { name: 'Update app' }).click()
    await page.getByRole('heading', { name: 'Update finished' }).waitFor({ timeout: 90_000 })
    await page.getByText('Rolled back', { exact: true }).waitFor()
    const after = (await engine.api('GET', '/containers/app/json')).json()
    expect(after.Image).toBe(v2)
    expect(after.State.Running).toBe(true)
    await expectAccessible(page, 'update rolled back')
    await screenshot(page, 'containers-update-rolled-back')
    env.ui.assertNoCspViolations()
    await page.context().close()
    await env.adminApi('POST', '/api/containers/app/remove', { force: true })
  })

  it('keeps its own URLs: reload and back land on the same view', async () => {
    const page = await env.ui.open('viewer', '/containers/networks')
    await page.getByRole('tab', { name: 'Networks', selected: true }).waitFor()
    await page.getByRole('tab', { name: 'Images' }).click()
    await page.waitForURL(/\/containers\/images$/)
    await page.reload()
    await page.getByRole('tab', { name: 'Images', selected: true }).waitFor()
    await page.goBack()
    await page.getByRole('tab', { name: 'Networks', selected: true }).waitFor()
    await gotoRetrying(page, `${env.ui.url}/containers/no-such-container`)
    await page.getByText('There is no container no-such-container').waitFor()
    await expectAccessible(page, 'missing container')
    await page.context().close()
  })
})
