/**
 * The containers page without an engine (a clear state, then recovery when the engine comes up), the images view
 * (pull from the local registry with progress, the in-use marker, delete with a confirmation) and the networks
 * view (create with the error at the field, delete), the overview card, and the list at phone width. A real
 * dockerd and docker-registry; axe and screenshots on every view.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectAccessible, screenshot } from '../../../test/support/browser.ts'
import { importTestImage, pushToRegistry } from './support/engine.ts'
import { startContainersUi, type ContainersUi } from './support/browser.ts'

describe('containers pages: engine state, images, networks, overview card', { timeout: 240_000 }, () => {
  let env: ContainersUi

  beforeAll(async () => {
    env = await startContainersUi({ engineLater: true })
  }, 180_000)
  afterAll(() => env?.close())

  it('says plainly that no engine is reachable, and works once it comes up', async () => {
    const page = await env.ui.open('viewer', '/containers')
    await page.getByText('No container engine is reachable').waitFor()
    await page
      .getByText(/docker\.sock/)
      .first()
      .waitFor()
    expect(await page.getByRole('table').count()).toBe(0)
    await expectAccessible(page, 'no engine')
    await screenshot(page, 'containers-no-engine')
    await page.getByRole('tab', { name: 'Images' }).click()
    await page.getByText('No container engine is reachable').waitFor()

    await env.startEngine()
    // The plugin looks for an absent engine again after 2 s: ask until it answers.
    await expect
      .poll(
        async () => {
          const retry = page.getByRole('button', { name: 'Check again' })
          if (await retry.count()) await retry.click()
          return page.getByText('No images on this host').count()
        },
        { timeout: 30_000, interval: 1000 },
      )
      .toBe(1)
    await page.getByRole('tab', { name: 'Containers' }).click()
    await page.getByText('No containers yet').waitFor()
    await page.context().close()
  })

  it('as operator: pulls from the local registry with progress, marks images in use, deletes with a confirmation', async () => {
    const { engine, registry } = env
    const ref = `${registry.address}/ui/pull-me:1`
    await importTestImage(engine, 'hostd-test/pull-me:1', 'pulled through the page')
    await pushToRegistry(engine, 'hostd-test/pull-me:1', ref)
    await engine.docker('rmi', ref, 'hostd-test/pull-me:1')

    const page = await env.ui.open('operator', '/containers/images')
    await page.getByText('No images on this host').waitFor()
    // The pull route answers when the pull is done: hold its (real) answer while the page shows its progress.
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    await page.route('**/api/images/pull', async (route) => {
      const response = await route.fetch()
      await released
      await route.fulfill({ response })
    })
    await page.getByRole('textbox', { name: 'Image reference' }).fill(ref)
    await page.getByRole('button', { name: 'Pull', exact: true }).click()
    await page.getByRole('progressbar', { name: `Pulling ${ref}` }).waitFor()
    await page.getByText(/The engine is downloading it: \d+ s so far/).waitFor()
    await expectAccessible(page, 'image pulling')
    await screenshot(page, 'containers-image-pulling')
    release()
    const row = page.getByRole('row').filter({ hasText: ref })
    await row.getByText('unused').waitFor({ timeout: 60_000 })
    await page.unroute('**/api/images/pull')
    expect((await engine.api('GET', `/images/${ref}/json`)).status).toBe(200)

    // In use: the marker shows, and deleting without force is refused at the checkbox, naming the container.
    expect(
      (await env.adminApi('POST', '/api/containers', { image: ref, name: 'holder', command: 'sleep 3600' })).status,
    ).toBe(201)
    await page.getByRole('button', { name: 'Refresh' }).click()
    await row.getByText('1 container').waitFor()
    await expectAccessible(page, 'images')
    await screenshot(page, 'containers-images')
    await row.getByRole('button', { name: `Delete ${ref}` }).click()
    const dialog = page.getByRole('dialog', { name: `Delete ${ref}?` })
    await dialog.getByRole('checkbox', { name: 'Delete even though a container uses it' }).waitFor()
    await expectAccessible(page, 'delete image dialog')
    await dialog.getByRole('button', { name: 'Delete image' }).click()
    await dialog.getByText(/holder/).waitFor()
    expect((await engine.api('GET', `/images/${ref}/json`)).status).toBe(200)

    // Once nothing uses it, the same confirmation deletes it.
    expect((await env.adminApi('POST', '/api/containers/holder/remove', { force: true })).status).toBe(200)
    await dialog.getByRole('button', { name: 'Delete image' }).click()
    await page.getByText(`${ref} was deleted`).waitFor()
    await expect.poll(() => row.count(), { timeout: 20_000 }).toBe(0)
    expect((await engine.api('GET', `/images/${ref}/json`)).status).toBe(404)
    env.ui.assertNoCspViolations()
    await page.context().close()
  })

  it('as operator: creates a network (a bad subnet is shown at the field) and deletes it', async () => {
    const name = `ui-net-${randomBytes(2).toString('hex')}`
    const page = await env.ui.open('operator', '/containers/networks')
    await page.getByRole('button', { name: 'Create network' }).click()
    const dialog = page.getByRole('dialog', { name: 'Create a network' })
    await dialog.getByRole('textbox', { name: 'Name' }).fill(name)
    await dialog.getByRole('textbox', { name: 'Subnet' }).fill('10.300.0.0/24')
    await dialog.getByRole('button', { name: 'Create network' }).click()
    const subnet = dialog.getByRole('textbox', { name: 'Subnet' })
    await expect.poll(() => subnet.getAttribute('aria-invalid'), { timeout: 30_000 }).toBe('true')
    await expectAccessible(page, 'create network dialog')
    await screenshot(page, 'containers-network-create')
    const free = `10.214.${1 + (randomBytes(1)[0]! % 250)}.0/24`
    await subnet.fill(free)
    await dialog.getByRole('button', { name: 'Create network' }).click()
    const row = page.getByRole('row').filter({ hasText: name })
    await row.getByText(free).waitFor({ timeout: 30_000 })
    const networks = () =>
      env.engine.api('GET', '/networks').then((r) => (r.json() as { Name: string }[]).map((n) => n.Name))
    expect(await networks()).toContain(name)
    // The engine's own networks offer no delete.
    expect(await page.getByRole('button', { name: 'Delete network bridge' }).count()).toBe(0)
    await expectAccessible(page, 'networks')
    await screenshot(page, 'containers-networks')

    await row.getByRole('button', { name: `Delete network ${name}` }).click()
    await page
      .getByRole('dialog', { name: `Delete network ${name}?` })
      .getByRole('button', { name: 'Delete network' })
      .click()
    await expect.poll(() => row.count(), { timeout: 20_000 }).toBe(0)
    expect(await networks()).not.toContain(name)
    env.ui.assertNoCspViolations()
    await page.context().close()
  })

  it('the overview card counts containers by state and links to the page; the list works at phone width', async () => {
    await importTestImage(env.engine, 'hostd-test/card:1', 'card')
    await env.engine.api('DELETE', '/containers/counted?force=1') // a retry starts from the same state
    expect(
      (
        await env.adminApi('POST', '/api/containers', {
          image: 'hostd-test/card:1',
          name: 'counted',
          command: 'sleep 3600',
        })
      ).status,
    ).toBe(201)
    const page = await env.ui.open('viewer', '/')
    const card = page.getByRole('region', { name: 'Containers' })
    await card.getByText('Running').waitFor({ timeout: 30_000 })
    await expect.poll(() => card.getByRole('definition').first().textContent()).toBe('1')
    await expectAccessible(page, 'overview with the containers card')
    await screenshot(page, 'containers-card')
    await card.getByRole('link', { name: 'Open containers' }).click()
    await page.getByRole('heading', { name: 'Containers', level: 1 }).waitFor()

    await page.setViewportSize({ width: 390, height: 800 })
    await page.getByRole('link', { name: 'counted', exact: true }).waitFor()
    await expectAccessible(page, 'containers list at phone width')
    await screenshot(page, 'containers-list-phone')
    await page.context().close()
  })
})
