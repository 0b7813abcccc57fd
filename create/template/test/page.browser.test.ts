/**
 * The page in a real browser against a real daemon: dropped into its plugins folder, the plugin appears in the
 * navigation, its page renders its count and live socket, and an operator's Bump shows. Skipped (and says so) when
 * there is no Chromium: set $CHROMIUM to one.
 */
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hasChromium, startPluginUi, type PluginUi } from './browser.ts'

describe.skipIf(!hasChromium)('starter page', { timeout: 120_000 }, () => {
  let ui: PluginUi
  beforeAll(async () => {
    ui = await startPluginUi()
    await ui.install(fileURLToPath(new URL('..', import.meta.url)), 'starter')
  }, 120_000)
  afterAll(() => ui?.close())

  it('shows the count, the live value, and bumps for an operator', async () => {
    const page = await ui.open('operator', '/')
    const nav = page.getByRole('navigation', { name: 'Main' })
    await nav.getByRole('link', { name: 'Starter' }).click({ timeout: 30_000 })
    // A third-party plugin's page runs in the sandboxed frame, titled after the page.
    const frame = page.getByTitle('Starter').contentFrame()
    await frame.getByRole('heading', { name: 'Starter', level: 1 }).waitFor()
    await frame.getByText('Count: 0').waitFor()
    await frame.getByRole('button', { name: 'Bump' }).click()
    await frame.getByText('Count: 1').waitFor()
    await expect.poll(() => frame.getByText(/operator\d+/).count(), { timeout: 15_000 }).toBeGreaterThan(0)
    // Look at it: test-results/starter-page.png.
    await page.screenshot({ path: 'test-results/starter-page.png', fullPage: true })
  })

  it('shows a viewer no Bump button', async () => {
    const page = await ui.open('viewer', '/starter')
    const frame = page.getByTitle('Starter').contentFrame()
    await frame.getByRole('heading', { name: 'Starter', level: 1 }).waitFor()
    expect(await frame.getByRole('button', { name: 'Bump' }).count()).toBe(0)
  })
})
