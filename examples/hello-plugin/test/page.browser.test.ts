/**
 * The hello plugin's page in a real browser (the pattern for any plugin's browser test): copied into a running
 * daemon's plugins folder, it appears in the navigation without a reload, its page renders and talks to its
 * route and socket, and it leaves the navigation when removed. A third-party plugin's page always runs in the
 * sandboxed frame (its route and socket go through the shell's bridge), so the test looks inside the frame.
 */
import { cp, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../../../test/support/browser.ts'

describe('hello plugin page', { timeout: 120_000 }, () => {
  let ui: UiHarness
  beforeAll(async () => {
    ui = await startUi()
  }, 120_000)
  afterAll(() => ui?.close())

  it('appears when hot-loaded, renders, and disappears when removed', async () => {
    const page = await ui.open('viewer', '/')
    const nav = page.getByRole('navigation', { name: 'Main' })
    await nav.getByRole('link', { name: 'Overview' }).waitFor()
    expect(await nav.getByRole('link', { name: 'Hello' }).count()).toBe(0)

    const dir = join(ui.daemon.pluginsDir, 'hello')
    await cp(join(import.meta.dirname, '..'), dir, { recursive: true, filter: (src) => !src.includes('node_modules') })
    await nav.getByRole('link', { name: 'Hello' }).click({ timeout: 20_000 })
    const frame = page.getByTitle('Hello').contentFrame()
    await frame.getByRole('heading', { name: 'Hello', level: 1 }).waitFor()
    await frame.getByText(/Hello, viewer\d*!/).waitFor()
    await frame.getByRole('button', { name: 'Connect' }).click()
    await frame.getByRole('textbox', { name: 'Message' }).fill('ping')
    await frame.getByRole('button', { name: 'Send' }).click()
    await frame.getByRole('list', { name: 'Echo replies' }).getByText('echo: ping').waitFor()
    await expectAccessible(page, 'hello page')
    await screenshot(page, 'plugin-hello')

    await rm(dir, { recursive: true })
    await expect.poll(() => nav.getByRole('link', { name: 'Hello' }).count(), { timeout: 20_000 }).toBe(0)
    await page.getByRole('heading', { name: 'Page not found' }).waitFor()
    ui.assertNoCspViolations()
  })
})
