/**
 * The containers list at scale and the overview card, in a real browser against a real engine (issue 29 items 5, 11,
 * 12): 60 containers, one page of 50 rows rendered; search by name and image; the state filter; a created container
 * shows its configured port; no icon is asked for a container without one, and the one that has one shows it on a
 * lower row; live CPU and memory of running rows; a container stopped outside hostd shows stopped in the list and on
 * the overview card (which names what is down but should run); selection with bulk stop and a red removal naming how
 * many; on a phone, cards without sideways scrolling with the actions beside the name. Light and dark screenshots.
 */
import { eventually } from '@hostd/sdk/testing'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectAccessible, screenshot } from '../../../test/support/browser.ts'
import { importTestImage } from './support/engine.ts'
import { startContainersUi, toTop, type ContainersUi } from './support/browser.ts'

const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63f8cfc0f01f00050001ff89993d1d0000000049454e44ae426082',
  'hex',
).toString('base64')
const FILLERS = 56

describe('containers list at scale', { timeout: 180_000 }, () => {
  let env: ContainersUi
  const image = 'hostd-test/list:1'

  const create = async (name: string, body: Record<string, unknown> = {}, start = false) => {
    const res = await env.engine.api('POST', `/containers/create?name=${name}`, {
      Image: image,
      Cmd: ['sleep', '3600'],
      // busybox sleep as pid 1 ignores SIGTERM: a stop would wait out the engine's 10 s.
      StopSignal: 'SIGKILL',
      ...body,
    })
    if (res.status !== 201) throw new Error(`create ${name}: ${res.status} ${res.body}`)
    if (start) {
      const started = await env.engine.api('POST', `/containers/${name}/start`)
      if (started.status !== 204) throw new Error(`start ${name}: ${started.status} ${started.body}`)
    }
  }

  beforeAll(async () => {
    env = await startContainersUi()
    await importTestImage(env.engine, image)
    await create('web-a', {}, true)
    await create('web-b', {}, true)
    await create('keeper', { HostConfig: { RestartPolicy: { Name: 'unless-stopped' } } }, true)
    await create('db-created', { HostConfig: { PortBindings: { '5432/tcp': [{ HostPort: '15432' }] } } })
    for (let i = 0; i < FILLERS; i += 8)
      await Promise.all(
        Array.from({ length: Math.min(8, FILLERS - i) }, (_, k) => create(`zz-${String(i + k).padStart(2, '0')}`)),
      )
    const icon = await env.adminApi('PUT', '/api/icons/container/zz-55', { data: PNG })
    expect(icon.status).toBe(204)
  }, 120_000)
  afterAll(async () => {
    await env?.close()
  })

  const rowOf = (page: Page, name: string) =>
    page.getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) })

  it('searches, filters, shows live figures and state, bulk-acts and stays within a phone screen', async () => {
    const { ui } = env
    const requested: string[] = []
    const page = await ui.open('operator', '/containers')
    page.on('request', (r) => {
      if (r.url().includes('/api/icons/container/')) requested.push(new URL(r.url()).pathname)
    })
    await page.setViewportSize({ width: 1440, height: 900 })
    await page.reload()

    // One page of rows: 50 of 60, with a pager.
    await page.getByText('1–50 of 60').waitFor()
    expect(await page.locator('tbody tr').count()).toBe(50)
    await page.getByRole('button', { name: 'Next page' }).click()
    await page.getByText('51–60 of 60').waitFor()
    // The lower row's icon is there (loaded, not blank); no icon was asked for a container that has none.
    const img = rowOf(page, 'zz-55').locator('img')
    await expect.poll(() => img.evaluate((i: HTMLImageElement) => i.complete && i.naturalWidth)).toBe(1)
    expect(requested).toEqual(['/api/icons/container/zz-55'])
    await page.getByRole('button', { name: 'Previous page' }).click()

    // Live CPU and memory of a running row.
    await expect
      .poll(() => rowOf(page, 'web-a').locator('td[data-label="CPU, memory"]').innerText())
      .toMatch(/^\d+\.\d % CPU\s+[\d.]+ \w*B$/)

    // Search (name or image) and the state filter, kept in the address.
    await page.getByRole('searchbox', { name: 'Search' }).fill('web')
    await page.getByText('2 of 60 shown').waitFor()
    expect(new URL(page.url()).search).toBe('?q=web')
    await page.getByRole('searchbox', { name: 'Search' }).fill('hostd-test/list')
    await page.getByText('60 of 60 shown').waitFor()
    await page.getByRole('searchbox', { name: 'Search' }).fill('')
    await page.getByRole('combobox', { name: 'State' }).selectOption('stopped')
    await page.getByText('57 of 60 shown').waitFor()
    // A created container shows the port it is configured with.
    await rowOf(page, 'db-created')
      .getByRole('link', { name: /15432 → 5432/ })
      .waitFor()
    await page.getByRole('combobox', { name: 'State' }).selectOption('running')
    await page.getByText('3 of 60 shown').waitFor()
    await expectAccessible(page, 'containers list (filtered)')
    await toTop(page)
    await screenshot(page, 'containers-list-running')

    // Stopped outside hostd: shown stopped in the list, and on the overview as down though it should run.
    const overview = await ui.open('viewer', '/')
    await overview.getByRole('link', { name: '3 running' }).waitFor()
    await env.engine.api('POST', '/containers/keeper/stop?t=0')
    await page.getByText('2 of 60 shown').waitFor()
    await overview.getByRole('link', { name: '2 running' }).waitFor()
    const down = overview.getByRole('group', { name: 'Down but should run' })
    await down.getByText('1 container is down but should run').waitFor()
    await down.getByRole('link', { name: 'keeper' }).waitFor()
    await screenshot(overview, 'containers-overview-card-down')
    await down.getByRole('link', { name: 'See them in the list' }).click()
    await overview.getByRole('link', { name: 'keeper', exact: true }).waitFor()
    expect(await overview.getByRole('combobox', { name: 'State' }).inputValue()).toBe('down')
    await overview.context().close()

    // Selection and bulk actions: stop both web containers, then remove them behind a red confirmation.
    await page.getByRole('checkbox', { name: 'Select web-a' }).check()
    await page.getByRole('checkbox', { name: 'Select web-b' }).check()
    const bulk = page.getByRole('group', { name: 'Selected containers' })
    await bulk.getByText('2 selected').waitFor()
    await bulk.getByRole('button', { name: 'Stop' }).click()
    await page.getByText('2 containers were stopped').waitFor()
    await page.getByText('0 of 60 shown').waitFor()
    await page.getByRole('combobox', { name: 'State' }).selectOption('all')
    await bulk.getByRole('button', { name: 'Remove' }).click()
    const dialog = page.getByRole('dialog', { name: 'Remove 2 containers?' })
    const confirmButton = dialog.getByRole('button', { name: 'Remove 2 containers' })
    expect(await confirmButton.getAttribute('class')).toContain('btn-danger')
    await screenshot(page, 'containers-list-remove-many')
    await confirmButton.click()
    await page.getByText('1–50 of 58').waitFor()
    await eventually(async () => {
      const names = (await env.engine.api('GET', '/containers/json?all=1')).json() as { Names: string[] }[]
      return !names.some((c) => /web-/.test(c.Names[0]!))
    })

    // A phone: cards, no sideways scrolling, each row's actions beside its name.
    await page.setViewportSize({ width: 390, height: 844 })
    await page.getByRole('searchbox', { name: 'Search' }).fill('keeper')
    await page.getByText('1 of 58 shown').waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth)).toBe(true)
    const start = page.getByRole('button', { name: 'Start keeper' })
    await start.waitFor()
    const [nameBox, startBox] = await Promise.all([
      page.getByRole('link', { name: 'keeper', exact: true }).boundingBox(),
      start.boundingBox(),
    ])
    expect(Math.abs(nameBox!.y - startBox!.y)).toBeLessThan(40)
    await toTop(page)
    await screenshot(page, 'containers-list-phone')
    await page.getByRole('searchbox', { name: 'Search' }).fill('')
    await page.getByText('1–50 of 58').waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth)).toBe(true)
  })
})
