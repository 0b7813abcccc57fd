/**
 * Issue 29, the shell's part, in Debian's Chromium against a real daemon (a few built-in plugins, so the navigation
 * has groups and the overview cards to order): grouped navigation with an icon per link (item 10), the kit's phone
 * layout of tables, the pager and selection, a long error toast with its details (items 7, 11, 12), dialogs that keep
 * and give back focus and breadcrumbs above the title (item 13), the audit log paged by key, and the daemon going away
 * and coming back on the same port and data (item 8). By role and accessible name; screenshots light and dark, at
 * 1440x900 and 390x844.
 */
import Database from 'better-sqlite3'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../support/browser.ts'
import { startDaemon, type Daemon } from '../support/daemon.ts'

const PLUGINS = 'metrics,system,branding,skills'
const DESKTOP = { width: 1440, height: 900 }
const PHONE = { width: 390, height: 844 }

/** Nothing scrolls sideways: the document is no wider than the window. */
const noSideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 0.5)

describe('web UI: the shell of issue 29', { timeout: 180_000 }, () => {
  let ui: UiHarness
  let restarted: Daemon | null = null
  beforeAll(async () => {
    ui = await startUi({ env: { HOSTD_BUILTIN_PLUGINS: PLUGINS } })
  }, 120_000)
  afterAll(async () => {
    await restarted?.stop({ keepDataDir: true })
    await ui?.close()
  })
  afterEach(() => ui.assertNoCspViolations())

  it('groups the navigation with an icon per link, and orders the overview cards', async () => {
    const page = await ui.open('admin', '/')
    await page.setViewportSize(DESKTOP)
    const nav = page.getByRole('navigation', { name: 'Main' })
    await nav.getByRole('link', { name: 'Skills' }).waitFor()
    const groups = await nav.getByRole('heading', { level: 2 }).allTextContents()
    expect(groups).toEqual(['Apps', 'System', 'Accounts', 'Settings'])
    expect(await nav.getByRole('list', { name: 'Settings' }).getByRole('link').allTextContents()).toEqual([
      'Plugins',
      'Branding',
    ])
    expect(await nav.getByRole('list', { name: 'Accounts' }).getByRole('link').allTextContents()).toEqual([
      'Users',
      'Audit log',
    ])
    // Branding and Skills both ask for the same icon: each link still draws one of its own.
    const icons = await nav
      .getByRole('link')
      .evaluateAll((links) => links.map((a) => a.querySelector('svg')!.innerHTML))
    expect(icons.length).toBeGreaterThanOrEqual(6)
    expect(new Set(icons).size).toBe(icons.length)
    // "Is my server fine?" first: memory and updates before the charts and the host's facts (the plugins' own order
    // is memory, charts, host, updates).
    await page.getByRole('region', { name: 'This server', exact: true }).waitFor()
    const titles = await page.locator('.card-grid > .card > .card-header h2').allTextContents()
    const updates = titles.findIndex((t) => t === 'Updates' || t === 'hostd')
    expect(titles.indexOf('Memory')).toBe(0)
    expect(updates).toBe(1)
    expect(titles.indexOf('Server load')).toBe(2)
    expect(titles.indexOf('This server')).toBe(3)
    await screenshot(page, 'shell29-nav')
    await page.context().close()
  })

  it('kit: a paged, selectable table that is cards on a phone; a long error toast with its details; dialogs keep focus', async () => {
    const page = await ui.open('viewer', '/gallery')
    await page.setViewportSize(DESKTOP)
    const table = page.getByRole('table', { name: 'Example services' })
    const pages = page.getByRole('navigation', { name: 'Example services: pages' })
    expect(await pages.getByRole('status').textContent()).toBe('1–10 of 23')
    expect(await table.getByRole('row').count()).toBe(11)
    await pages.getByRole('button', { name: 'Next page' }).click()
    expect(await pages.getByRole('status').textContent()).toBe('11–20 of 23')
    await table.getByRole('checkbox', { name: 'Select service-12' }).check()
    await page.getByText('1 selected.').waitFor()
    await table.getByRole('checkbox', { name: 'Select all shown' }).check()
    await page.getByText('10 selected.').waitFor()
    await pages.getByRole('button', { name: 'Previous page' }).click()
    expect(await table.getByRole('checkbox', { name: 'Select all shown' }).isChecked()).toBe(false)

    // A translated error shows the tool's own words collapsed under "Details".
    const translated = page.getByRole('region', { name: 'Translated error' })
    const details = translated.getByText('driver failed programming external connectivity', { exact: false })
    expect(await details.isVisible()).toBe(false)
    await translated.getByText('Details', { exact: true }).click()
    expect(await details.isVisible()).toBe(true)

    // Dialogs: Tab stays inside; closing gives focus back to the button that opened it.
    const opener = page.getByRole('button', { name: 'Open a dialog' })
    await opener.click()
    const dialog = page.getByRole('dialog', { name: 'An example dialog' })
    await dialog.waitFor()
    for (let i = 0; i < 6; i++) {
      await page.keyboard.press(i % 2 ? 'Shift+Tab' : 'Tab')
      await page.keyboard.press('Tab')
      expect(await dialog.evaluate((d) => d.contains(document.activeElement))).toBe(true)
    }
    await dialog.getByRole('button', { name: 'Done' }).click()
    await expect.poll(() => opener.evaluate((b) => b === document.activeElement)).toBe(true)
    const ask = page.getByRole('button', { name: 'Ask to confirm' })
    await ask.click()
    await page.getByRole('dialog', { name: 'Remove the example?' }).getByRole('button', { name: 'Cancel' }).click()
    await expect.poll(() => ask.evaluate((b) => b === document.activeElement)).toBe(true)

    // A long error toast wraps inside the window, its details collapsed.
    const toastFits = async () => {
      await page.getByRole('button', { name: 'Long error toast' }).click()
      const toast = page.getByRole('region', { name: 'Notifications' }).getByRole('listitem').last()
      await toast.getByText('Port 8082 is used by web-8082').waitFor()
      await toast.getByText('Details', { exact: true }).click()
      await toast.getByText(/port is already allocated/).waitFor()
      const box = (await toast.boundingBox())!
      const width = page.viewportSize()!.width
      expect(box.x).toBeGreaterThanOrEqual(0)
      expect(box.x + box.width).toBeLessThanOrEqual(width)
      expect(await noSideways(page)).toBe(true)
    }
    await toastFits()
    // axe and the desktop screenshots of the gallery (these parts included): test/ui/gallery.browser.test.ts.

    // A phone: the rows are cards (name and actions on one line), nothing scrolls sideways.
    await page.setViewportSize(PHONE)
    await page
      .getByRole('region', { name: 'Notifications' })
      .getByRole('button', { name: 'Dismiss notification' })
      .first()
      .click()
    expect(await noSideways(page)).toBe(true)
    const name = table.getByRole('cell', { name: 'service-01', exact: true })
    const remove = table.getByRole('button', { name: 'Remove service-01' })
    const [n, r] = [(await name.boundingBox())!, (await remove.boundingBox())!]
    expect(r.x + r.width).toBeLessThanOrEqual(PHONE.width)
    expect(Math.abs(n.y + n.height / 2 - (r.y + r.height / 2))).toBeLessThan(r.height)
    await toastFits()
    await screenshot(page, 'shell29-gallery-phone')
    await page.context().close()
  })

  it('on a phone: users keep their actions, audit times stay on one line, sessions and tokens fit; breadcrumbs above the title', async () => {
    const judy = await ui.createUser('operator', 'judy')
    const page = await ui.open('admin', '/users')
    await page.setViewportSize(PHONE)
    const remove = page.getByRole('button', { name: `Remove ${judy.username}` })
    await remove.waitFor()
    const box = (await remove.boundingBox())!
    expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width)
    expect(await noSideways(page)).toBe(true)
    await expectAccessible(page, 'users as cards on a phone')
    await screenshot(page, 'shell29-users-phone')

    await page.getByRole('link', { name: judy.username }).click()
    const crumbs = page.getByRole('navigation', { name: 'Breadcrumb' })
    await crumbs.getByRole('link', { name: 'Users' }).waitFor()
    const title = page.getByRole('heading', { level: 1, name: judy.username })
    expect((await crumbs.boundingBox())!.y).toBeLessThan((await title.boundingBox())!.y)
    expect(await noSideways(page)).toBe(true)

    await page.goto(`${ui.url}/audit`)
    const time = page.getByRole('table').locator('time').first()
    await time.waitFor()
    const lineHeight = await time.evaluate((t) => Number.parseFloat(getComputedStyle(t).lineHeight) || 20)
    expect((await time.boundingBox())!.height).toBeLessThan(lineHeight * 1.5)
    expect(await noSideways(page)).toBe(true)
    await screenshot(page, 'shell29-audit-phone')

    await page.goto(`${ui.url}/account/sessions`)
    await page.getByRole('tabpanel').getByRole('table').waitFor()
    expect(await noSideways(page)).toBe(true)
    await screenshot(page, 'shell29-sessions-phone')
    await page.goto(`${ui.url}/account/tokens`)
    await page.getByRole('tabpanel').getByText('No API tokens').waitFor()
    expect(await noSideways(page)).toBe(true)
    await screenshot(page, 'shell29-tokens-phone')
    await page.context().close()
  })

  it('shows "Disconnected" while the daemon is gone, comes back by itself when it returns; the audit log pages by key', async () => {
    const page = await ui.open('admin', '/audit')
    await page.setViewportSize(DESKTOP)
    await page.getByRole('table').waitFor()
    const { dataDir, port } = ui.daemon
    await ui.daemon.stop({ keepDataDir: true }) // SIGTERM by its PID
    // The next page's code cannot load: no "Failed to fetch dynamically imported module", a banner instead.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Users' }).click()
    const banner = page.getByRole('alert').filter({ hasText: 'Disconnected' })
    await banner.waitFor()
    expect(await banner.textContent()).toMatch(/reconnecting/)
    await banner.getByRole('button', { name: 'Reconnect now' }).waitFor()
    expect(await page.getByText(/could not be loaded|Failed to fetch/).count()).toBe(0)
    await screenshot(page, 'shell29-disconnected')
    // Meanwhile, 130 records for the paging below (the daemon holds its database exclusively while it runs).
    const db = new Database(join(dataDir, 'hostd.sqlite'))
    const insert = db.prepare(
      "insert into audit (time, action, target, result, detail) values (?, 'test.paging', ?, 'success', null)",
    )
    db.transaction(() => {
      for (let i = 0; i < 130; i++) insert.run(Date.now() - 60_000 + i, `record-${i}`)
    })()
    db.close()
    restarted = await startDaemon({
      dataDir,
      env: { HOSTD_PORT: String(port), HOSTD_BUILTIN_PLUGINS: PLUGINS },
      startTimeoutMs: 60_000,
    })
    // No click: the banner goes and the page loads once the daemon answers.
    await page.getByRole('heading', { level: 1, name: 'Users' }).waitFor({ timeout: 30_000 })
    await page.getByRole('cell', { name: 'judy', exact: true }).waitFor()
    await banner.waitFor({ state: 'detached' })

    // The audit log pages by key: older and newer pages.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click()
    const pager = page.getByRole('navigation', { name: 'Audit pages' })
    await page.getByRole('cell', { name: 'record-129', exact: true }).waitFor()
    const rows = () => page.getByRole('table').getByRole('row').allTextContents()
    await pager.getByRole('button', { name: 'Older' }).click()
    await page.getByRole('cell', { name: 'record-79', exact: true }).waitFor()
    expect(new URL(page.url()).searchParams.get('before')).toMatch(/^\d+$/)
    expect(await pager.textContent()).toContain('51–100 of')
    const second = await rows()
    await pager.getByRole('button', { name: 'Older' }).click()
    await page.getByRole('cell', { name: 'record-29', exact: true }).waitFor()
    await pager.getByRole('button', { name: 'Newer' }).click()
    await page.getByRole('cell', { name: 'record-79', exact: true }).waitFor()
    expect(new URL(page.url()).searchParams.get('after')).toMatch(/^\d+$/)
    expect(await rows()).toEqual(second)
    await page.context().close()
  })
})
