/**
 * The kit gallery (/gallery, ui/src/pages/gallery.tsx) in Debian's Chromium: any signed-in user opens it by its
 * address (it is not in the navigation), every kit component is there in its states, the ones that act do (a field
 * error from onSubmit, a toast, a modal dialog, a confirmation, the stale notice of a refresh that failed), and axe
 * finds nothing serious in it, with a dialog open too. Driven by role and accessible name; screenshots in both themes.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../support/browser.ts'

const SECTIONS = [
  'Buttons',
  'Badges',
  'Loading, empty and error states',
  'Forms',
  'Tables',
  'Dialogs and toasts',
  'Layout',
  'Charts',
  'Live work',
  'Icons',
]

describe('web UI: the kit gallery', { timeout: 120_000 }, () => {
  let ui: UiHarness
  let page: Page
  beforeAll(async () => {
    ui = await startUi()
    page = await ui.open('viewer', '/gallery')
  }, 120_000)
  afterAll(() => ui?.close())
  afterEach(() => ui.assertNoCspViolations())

  const section = (name: string) => page.getByRole('region', { name, exact: true })
  const toasts = () => page.getByRole('region', { name: 'Notifications' })

  it('opens for a viewer at its address, with every section, and is not in the navigation', async () => {
    await expect.poll(() => page.getByRole('heading', { level: 1, name: 'Kit gallery' }).isVisible()).toBe(true)
    for (const name of SECTIONS) expect(await section(name).isVisible(), name).toBe(true)
    const nav = page.getByRole('navigation', { name: 'Main' })
    expect(await nav.getByRole('link', { name: 'Overview' }).count()).toBe(1)
    expect(await nav.getByRole('link', { name: /gallery/i }).count()).toBe(0)
    await expect.poll(() => page.title()).toContain('Kit gallery')
  })

  it('shows the buttons, badges, states, table, chart and icons as the kit draws them', async () => {
    const buttons = section('Buttons')
    expect(await buttons.getByRole('button', { name: 'Disabled' }).isDisabled()).toBe(true)
    expect(await buttons.getByRole('button', { name: 'Settings (an icon button)' }).isVisible()).toBe(true)

    const states = section('Loading, empty and error states')
    expect(await states.getByRole('region', { name: 'Loading state' }).getByRole('status').textContent()).toContain(
      'Loading containers…',
    )
    expect(
      await states.getByRole('region', { name: 'Empty state' }).getByRole('button', { name: 'Run one' }).isVisible(),
    ).toBe(true)
    const error = states.getByRole('region', { name: 'Error state' }).getByRole('alert')
    expect(await error.textContent()).toContain('No container engine is reachable')
    expect(await error.getByRole('button', { name: 'Try again' }).isVisible()).toBe(true)
    const stale = states.getByRole('region', { name: 'Stale data' })
    expect(await stale.getByRole('status').textContent()).toMatch(
      /^Not up to date \(loaded 3 minutes ago\): No container engine is reachable$/,
    )
    expect(await stale.getByText('The list as it was three minutes ago.').isVisible()).toBe(true)
    expect(await states.getByRole('progressbar', { name: 'Copying files' }).getAttribute('aria-valuenow')).toBe('42')
    expect(await states.getByRole('list', { name: 'Image layers' }).getByRole('progressbar').count()).toBe(3)

    const table = section('Tables').getByRole('table', { name: 'Example containers' })
    expect(await table.getByRole('row').count()).toBe(4)
    expect(await table.getByRole('columnheader', { name: 'Name' }).getAttribute('aria-sort')).toBe('ascending')
    await table.getByRole('button', { name: 'Size' }).click()
    expect(await table.getByRole('row').nth(1).textContent()).toContain('backup')

    await expect
      .poll(() => section('Charts').getByRole('img', { name: 'Example CPU usage chart' }).getAttribute('data-points'))
      .toBe('120')
    expect(
      await section('Icons').getByRole('list', { name: 'Icon names' }).getByRole('listitem').count(),
    ).toBeGreaterThan(40)
    await expectAccessible(page, 'the kit gallery')
    await screenshot(page, 'gallery')
  })

  it('a refresh that fails keeps the last data on screen and says so; the next good one clears it', async () => {
    const states = section('Loading, empty and error states')
    await expect.poll(() => states.getByText(/^Loaded at /).isVisible()).toBe(true)
    const loaded = await states.getByText(/^Loaded at /).textContent()
    await states.getByRole('switch', { name: 'Make the refresh fail' }).check()
    const notice = states.getByRole('status').filter({ hasText: 'The server could not be reached' })
    await expect.poll(() => notice.textContent()).toMatch(/^Not up to date \(loaded .+\): The server could not be/)
    expect(await states.getByText(/^Loaded at /).textContent()).toBe(loaded)
    await expectAccessible(page, 'the kit gallery with stale data')
    await states.getByRole('switch', { name: 'Make the refresh fail' }).uncheck()
    await expect.poll(() => notice.count()).toBe(0)
    expect(await states.getByText(/^Loaded at /).isVisible()).toBe(true)
  })

  it('the form shows a field error from onSubmit, then succeeds with a toast', async () => {
    const form = section('Forms').getByRole('form', { name: 'Example form' })
    await form.getByRole('textbox', { name: 'Name' }).fill('taken')
    await form.getByRole('button', { name: 'Create' }).click()
    await expect.poll(() => form.getByText('This name is taken').isVisible()).toBe(true)
    expect(await form.getByRole('textbox', { name: 'Name' }).getAttribute('aria-invalid')).toBe('true')
    await form.getByRole('textbox', { name: 'Name' }).fill('web')
    await form.getByRole('button', { name: 'Create' }).click()
    await expect.poll(() => toasts().getByText('Created web').isVisible()).toBe(true)
  })

  it('the dialog is modal and gives focus back; a confirmation resolves to what was chosen', async () => {
    const card = section('Dialogs and toasts')
    await card.getByRole('button', { name: 'Open a dialog' }).click()
    const dialog = page.getByRole('dialog', { name: 'An example dialog' })
    await expect.poll(() => dialog.isVisible()).toBe(true)
    await expectAccessible(page, 'the kit gallery with a dialog open')
    await screenshot(page, 'gallery-dialog')
    await page.keyboard.press('Escape')
    await expect.poll(() => dialog.isVisible()).toBe(false)
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe('Open a dialog')

    await card.getByRole('button', { name: 'Ask to confirm' }).click()
    const ask = page.getByRole('dialog', { name: 'Remove the example?' })
    await ask.getByRole('button', { name: 'Cancel' }).click()
    await expect.poll(() => toasts().getByText('Cancelled').isVisible()).toBe(true)
    await card.getByRole('button', { name: 'Error toast', exact: true }).click()
    await expect.poll(() => toasts().getByText('The server refused the change').isVisible()).toBe(true)
  })
})
