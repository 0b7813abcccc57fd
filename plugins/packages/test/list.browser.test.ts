/**
 * The packages page with this machine's full package list (a copy of /var/lib/dpkg/status, about 800 packages) in a
 * real browser: one page of rows at a time with a pager, no sideways scrolling and a page of reasonable height on a
 * phone, and what the system needs never offered for removal: apt has no Remove button, and libc6 (not essential
 * itself) is refused in the removal dialog, which names the essential packages apt would take with it (apt's
 * simulation through the real root helper, in dry-run: nothing can change; a simulation changes nothing anyway).
 */
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHelper, type RunningHelper } from '../../../helper/test/start-helper.ts'
import { screenshot, startUi, type UiHarness } from '../../../test/support/browser.ts'
import { REPO_ROOT } from '../../../test/support/daemon.ts'

describe("packages page with this machine's full list", { timeout: 120_000 }, () => {
  let work: string
  let helper: RunningHelper
  let ui: UiHarness
  let page: Page
  const table = () => page.getByRole('table', { name: 'Installed packages' })
  const rows = () => page.evaluate(() => document.querySelectorAll('table tbody tr').length)
  const noSidewaysScroll = () => page.evaluate(() => document.documentElement.scrollWidth <= innerWidth)

  beforeAll(async () => {
    await mkdir(join(REPO_ROOT, '.hostd-test'), { recursive: true })
    work = await mkdtemp(join(REPO_ROOT, '.hostd-test', 'packages-list-'))
    await mkdir(join(work, 'dpkg', 'updates'), { recursive: true })
    await copyFile('/var/lib/dpkg/status', join(work, 'dpkg', 'status'))
    helper = await startHelper({ dryRun: true })
    ui = await startUi({
      env: {
        HOSTD_BUILTIN_PLUGINS: 'packages',
        HOSTD_PACKAGES_DPKG_ADMINDIR: join(work, 'dpkg'),
        HOSTD_HELPER_SOCKET: helper.socket,
      },
    })
  }, 90_000)
  afterAll(async () => {
    await ui?.close()
    await helper?.stop()
    if (work) await rm(work, { recursive: true, force: true })
  })

  it('renders one page of rows with a pager, at desktop and phone width, light and dark', async () => {
    page = await ui.open('admin', '/packages')
    await page.setViewportSize({ width: 1440, height: 900 })
    const range = page.getByRole('navigation', { name: 'Installed packages: pages' }).getByRole('status')
    await range.waitFor({ timeout: 30_000 })
    const total = Number(/^1–100 of (\d+)$/.exec(await range.innerText())?.[1])
    expect(total).toBeGreaterThan(200)
    expect(await rows()).toBe(100)
    await page.getByRole('button', { name: 'Next page' }).click()
    await expect.poll(() => range.innerText()).toBe(`101–200 of ${total}`)
    expect(await noSidewaysScroll()).toBe(true)
    await screenshot(page, 'packages-full-desktop')

    await page.setViewportSize({ width: 390, height: 844 })
    await page.reload()
    await range.waitFor({ timeout: 30_000 })
    expect(await range.innerText()).toBe(`1–25 of ${total}`)
    expect(await rows()).toBe(25)
    expect(await noSidewaysScroll()).toBe(true)
    // 25 cards, not 800 rows (the issue measured 70,960 px).
    expect(await page.evaluate(() => document.documentElement.scrollHeight)).toBeLessThan(10_000)
    await screenshot(page, 'packages-full-phone')
  })

  it('offers no removal of what the system needs, and names what a removal would take', async () => {
    await page.setViewportSize({ width: 1440, height: 900 })
    const filter = page.getByRole('searchbox', { name: 'Filter installed packages' })
    await filter.fill('apt')
    const aptRow = table()
      .getByRole('row')
      .filter({ has: page.getByText('apt', { exact: true }) })
    await aptRow.waitFor()
    expect(await aptRow.getByRole('button', { name: /^Remove/ }).count()).toBe(0)

    await filter.fill('libc6')
    await table().getByRole('button', { name: 'Remove libc6', exact: true }).click()
    const dialog = page.getByRole('dialog', { name: 'Remove libc6?' })
    await dialog.getByText('libc6 cannot be removed here').waitFor({ timeout: 60_000 })
    await dialog.getByText(/^Removing libc6 would also remove .*which this system needs/).waitFor()
    expect(await dialog.getByRole('button', { name: /^Remove/ }).count()).toBe(0)
    await screenshot(page, 'packages-remove-refused')
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    // The simulation went through the root helper; nothing was removed.
    expect((await helper.log()).filter((e) => e.action !== 'pkg.simulateRemove')).toEqual([])
    ui.assertNoCspViolations()
  })
})
