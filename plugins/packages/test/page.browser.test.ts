/**
 * The packages page in a real browser against the real daemon, a real apt and dpkg working on an isolated root with
 * a local repository (test/support/apt-root.ts), and the real root helper (helper/test/start-helper.ts). An admin
 * refreshes the lists, searches, installs with live progress (the progress bar's value is seen to change), upgrades
 * to a newer version, removes and purges, each through the page's buttons and the /api/packages/exec socket; the
 * list follows each step, checked against dpkg-query. A job held running by a gated postinst shows the panel during
 * a job, and a second admin page that tries to start another one gets the busy answer (close 4409) with the running
 * job. A viewer sees the lists and the search with no control. The machine's own /var/lib/dpkg/status is
 * checksummed before and after: untouched.
 */
import type { Locator, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHelper, type RunningHelper } from '../../../helper/test/start-helper.ts'
import { createAptRoot, machineDpkgStatusHash, type AptRoot } from '../../../test/support/apt-root.ts'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../../../test/support/browser.ts'

describe('packages page (real apt and dpkg on an isolated root, real helper)', { timeout: 240_000 }, () => {
  let statusBefore: string
  let apt: AptRoot
  let helper: RunningHelper
  let ui: UiHarness
  let page: Page

  const shot = async (p: Page, name: string) => {
    await p.evaluate(() => window.scrollTo(0, 0))
    await screenshot(p, name)
  }
  /** The job panel (a region named by the job's title) and its result. */
  const jobPanel = (title: string | RegExp) => page.getByRole('region', { name: title })
  const waitForResult = async (title: string | RegExp, word: 'Done' | 'Failed' = 'Done') => {
    await jobPanel(title).getByText(word, { exact: true }).waitFor({ timeout: 120_000 })
  }
  const installedTable = () => page.getByRole('table', { name: 'Installed packages' })
  /** The row of a package in a table (its name cell's text is exactly the name). */
  const rowOf = (table: Locator, name: string) =>
    table.getByRole('row').filter({ has: table.page().getByText(name, { exact: true }) })
  /** Runs `action` while recording every value the job's progress bar takes (a MutationObserver in the page). */
  async function recordingProgress(action: () => Promise<void>): Promise<number[]> {
    await page.evaluate(() => {
      const seen: number[] = []
      ;(window as any).__progress = seen
      new MutationObserver(() => {
        for (const bar of document.querySelectorAll('[role=progressbar][aria-valuenow]')) {
          const value = Number(bar.getAttribute('aria-valuenow'))
          if (seen.at(-1) !== value) seen.push(value)
        }
      }).observe(document.body, {
        subtree: true,
        childList: true,
        attributes: true,
        attributeFilter: ['aria-valuenow'],
      })
    })
    await action()
    return page.evaluate(() => (window as any).__progress as number[])
  }

  beforeAll(async () => {
    statusBefore = machineDpkgStatusHash()
    apt = await createAptRoot()
    await apt.publish(
      { name: 'hostd-demo', version: '1.0', summary: 'Demo package for hostd tests' },
      { name: 'hostd-demo-extras', version: '1.0', summary: 'Extras for the demo', depends: 'hostd-demo' },
      { name: 'hostd-base', version: '1.0', summary: 'A base package the system needs', essential: true },
      { name: 'hostd-slow', version: '1.0', summary: 'A package whose setup waits for the test', gated: true },
    )
    helper = await startHelper({ env: { HOSTD_HELPER_APT_CONFIG: apt.aptConfig } })
    ui = await startUi({
      builtinPlugins: true,
      env: {
        HOSTD_HELPER_SOCKET: helper.socket,
        HOSTD_PACKAGES_DPKG_ADMINDIR: apt.admindir,
        HOSTD_PACKAGES_APT_CONFIG: apt.aptConfig,
      },
    })
  }, 120_000)
  afterAll(async () => {
    await ui?.close()
    await apt?.release()
    await helper?.stop()
    await apt?.remove()
    // The machine's own package database is untouched by all of it.
    expect(machineDpkgStatusHash()).toBe(statusBefore)
  })

  it('starts empty, refreshes the package lists, and finds the demo package', async () => {
    page = await ui.open('admin', '/packages')
    await page.getByRole('heading', { name: 'Packages', level: 1 }).waitFor()
    await page.getByText('No packages installed').waitFor()
    await expectAccessible(page, 'packages empty')
    await shot(page, 'packages-empty')

    await page.getByRole('button', { name: 'Refresh package lists' }).click()
    await waitForResult('Refreshing the package lists')
    await jobPanel('Refreshing the package lists')
      .getByRole('log')
      .getByText(/Reading package lists/)
      .first()
      .waitFor()

    await page.getByRole('tab', { name: 'Find packages' }).click()
    await page.getByRole('searchbox', { name: 'Search packages' }).fill('demo')
    await expect.poll(() => new URL(page.url()).search).toBe('?q=demo')
    const results = page.getByRole('table', { name: 'Packages matching “demo”' })
    await rowOf(results, 'hostd-demo').getByText('Not installed').waitFor()
    await rowOf(results, 'hostd-demo-extras').waitFor()
    await page.getByText('2 matches').waitFor()
    await expectAccessible(page, 'packages search')
    await shot(page, 'packages-search')
  })

  it('installs with live progress and a result; the search and the list follow', async () => {
    const values = await recordingProgress(async () => {
      await page.getByRole('button', { name: 'Install hostd-demo', exact: true }).click()
      await waitForResult('Installing hostd-demo')
    })
    // The bar moved through several values from apt's status fd before it finished.
    expect(new Set(values).size, JSON.stringify(values)).toBeGreaterThanOrEqual(3)
    expect(values.at(-1)).toBe(100)
    const panel = jobPanel('Installing hostd-demo')
    expect(await panel.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('100')
    await panel.getByRole('log').getByText('Setting up hostd-demo (1.0) ...').waitFor()
    await rowOf(page.getByRole('table', { name: 'Packages matching “demo”' }), 'hostd-demo')
      .getByText('Installed', { exact: true })
      .waitFor()
    expect(await apt.installed()).toEqual({ 'hostd-demo': '1.0' })
    await expectAccessible(page, 'packages installed result')
    await shot(page, 'packages-install-done')

    await page.getByRole('tab', { name: /^Installed/ }).click()
    await rowOf(installedTable(), 'hostd-demo').getByText('1.0', { exact: true }).waitFor()
    await page.getByRole('tab', { name: 'Installed (1)' }).waitFor()
  })

  it('shows a newer version as an upgrade after a refresh, and upgrades to it', async () => {
    await apt.publish({ name: 'hostd-demo', version: '1.1', summary: 'Demo package for hostd tests' })
    await page.getByRole('button', { name: 'Refresh package lists' }).click()
    await waitForResult('Refreshing the package lists')
    const row = rowOf(installedTable(), 'hostd-demo')
    await row.getByText('Upgrade to 1.1').waitFor()
    await page.getByText('1 upgrade available').waitFor()
    await page.getByRole('button', { name: 'Upgrade all (1)' }).waitFor()

    await page.getByRole('tab', { name: 'Upgrades (1)' }).click()
    expect(new URL(page.url()).pathname).toBe('/packages/upgrades')
    const upgrades = page.getByRole('table', { name: 'Upgradable packages' })
    await rowOf(upgrades, 'hostd-demo').waitFor()
    await expectAccessible(page, 'packages upgrades')
    await shot(page, 'packages-upgrades')

    await upgrades.getByRole('button', { name: 'Upgrade hostd-demo' }).click()
    await waitForResult('Upgrading hostd-demo')
    await page.getByText('Everything is up to date').waitFor()
    expect(await apt.installed()).toEqual({ 'hostd-demo': '1.1' })
    await page.getByRole('tab', { name: /^Installed/ }).click()
    await rowOf(installedTable(), 'hostd-demo').getByText('1.1', { exact: true }).waitFor()
    expect(await installedTable().getByText('Upgrade to 1.1').count()).toBe(0)
  })

  it('filters and sorts the installed list, the filter in the URL', async () => {
    // The search tab remembers the last search.
    await page.getByRole('tab', { name: 'Find packages' }).click()
    expect(new URL(page.url()).search).toBe('?q=demo')
    await page.getByRole('button', { name: 'Install hostd-demo-extras' }).click()
    await waitForResult('Installing hostd-demo-extras')
    await page.getByRole('tab', { name: /^Installed/ }).click()
    await page.getByRole('tab', { name: 'Installed (2)' }).waitFor()
    const names = async () => (await installedTable().getByRole('row').all()).length - 1
    expect(await names()).toBe(2)
    await page.getByRole('searchbox', { name: 'Filter installed packages' }).fill('extras')
    await expect.poll(names).toBe(1)
    expect(new URL(page.url()).search).toBe('?filter=extras')
    await page.reload()
    await expect.poll(names, { timeout: 20_000 }).toBe(1)
    expect(await page.getByRole('searchbox', { name: 'Filter installed packages' }).inputValue()).toBe('extras')
    await page.getByRole('searchbox', { name: 'Filter installed packages' }).fill('nothing-like-this')
    await page.getByText('No installed package matches “nothing-like-this”').waitFor()
    await page.getByRole('searchbox', { name: 'Filter installed packages' }).fill('')
    await expect.poll(names).toBe(2)
    const first = async () =>
      (await installedTable().getByRole('row').nth(1).getByRole('cell').first().innerText()).split('\n')[0]
    expect(await first()).toBe('hostd-demo')
    await installedTable().getByRole('button', { name: 'Package' }).click()
    expect(await first()).toBe('hostd-demo-extras')

    await page.setViewportSize({ width: 390, height: 844 })
    await installedTable().getByRole('button', { name: 'Remove hostd-demo-extras' }).waitFor()
    // Rows are cards on a phone: nothing scrolls sideways.
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth)).toBe(true)
    await expectAccessible(page, 'packages installed at phone width')
    await shot(page, 'packages-installed-phone')
    await page.setViewportSize({ width: 1280, height: 860 })
  })

  it('shows a running job, and a second admin page gets the busy answer with it', async () => {
    // A second admin page opened before the job starts: its list does not know the job yet.
    const other = await ui.open('admin', '/packages/search?q=slow')
    await other.getByRole('button', { name: 'Install hostd-slow' }).waitFor()

    await page.getByRole('tab', { name: 'Find packages' }).click()
    await page.getByRole('searchbox', { name: 'Search packages' }).fill('slow')
    await page.getByRole('button', { name: 'Install hostd-slow' }).click()
    const panel = jobPanel('Installing hostd-slow')
    // The gated postinst holds the job at "Setting up" until the test releases it.
    await panel
      .getByText(/Setting up hostd-slow/)
      .first()
      .waitFor({ timeout: 120_000 })
    expect(await page.getByRole('button', { name: 'Refresh package lists' }).isDisabled()).toBe(true)
    await expectAccessible(page, 'packages job running')
    await shot(page, 'packages-job-running')

    await other.getByRole('button', { name: 'Install hostd-slow' }).click()
    const refused = other.getByRole('region', { name: 'Installing hostd-slow' })
    await refused.getByText('Busy', { exact: true }).waitFor()
    await refused.getByText(/Another package job is running: install hostd-slow by admin/).waitFor()
    // Its list now knows the job: the page says whose it is and waits with every action disabled.
    const notice = other.getByRole('status').filter({ hasText: 'Another package job is running' })
    await notice.getByText(/install hostd-slow by admin/).waitFor()
    expect(await other.getByRole('button', { name: 'Refresh package lists' }).isDisabled()).toBe(true)
    // Searched again meanwhile: the half-installed package is listed once, as installed.
    const otherResults = other.getByRole('table', { name: 'Packages matching “slow”' })
    await rowOf(otherResults, 'hostd-slow').getByText('Installed', { exact: true }).waitFor()
    expect(await rowOf(otherResults, 'hostd-slow').count()).toBe(1)
    await expectAccessible(other, 'packages busy')
    await shot(other, 'packages-busy')

    await apt.release()
    await waitForResult('Installing hostd-slow')
    await notice.waitFor({ state: 'detached', timeout: 30_000 })
    expect(await other.getByRole('button', { name: 'Refresh package lists' }).isDisabled()).toBe(false)
    await other.context().close()
    expect(await apt.installed()).toMatchObject({ 'hostd-slow': '1.0' })
  })

  it('lists what apt removes with a package before removing it, in red; purges; never offers what the system needs', async () => {
    await page.getByRole('tab', { name: /^Installed/ }).click()
    await installedTable().getByRole('button', { name: 'Remove hostd-demo', exact: true }).click()
    const ask = page.getByRole('dialog', { name: 'Remove hostd-demo?' })
    // apt's simulation, asked through the root helper: the package that depends on it goes too.
    await ask.getByRole('alert').getByText('apt also removes 1 package that depends on it.').waitFor()
    const removes = ask.getByRole('list', { name: 'Packages apt removes' })
    expect(await removes.getByRole('listitem').allInnerTexts()).toEqual([
      expect.stringMatching(/^hostd-demo 1\.1\b/),
      expect.stringMatching(/^hostd-demo-extras 1\.0\b/),
    ])
    await expectAccessible(page, 'packages remove dialog')
    await shot(page, 'packages-remove-dialog')
    await ask.getByRole('button', { name: 'Cancel' }).click()
    expect(await apt.installed()).toHaveProperty('hostd-demo')

    await installedTable().getByRole('button', { name: 'Remove hostd-demo', exact: true }).click()
    await ask.getByRole('button', { name: 'Remove', exact: true }).click()
    await waitForResult('Removing hostd-demo')
    await expect.poll(() => rowOf(installedTable(), 'hostd-demo').count()).toBe(0)
    expect(await apt.installed()).toEqual({ 'hostd-slow': '1.0' })

    await installedTable().getByRole('button', { name: 'Remove hostd-slow' }).click()
    const dialog = page.getByRole('dialog', { name: 'Remove hostd-slow?' })
    await dialog.getByRole('checkbox', { name: 'Also delete their configuration files (purge)' }).check()
    await dialog.getByRole('button', { name: 'Remove and purge' }).click()
    await waitForResult('Purging hostd-slow')
    await page.getByText('No packages installed').waitFor()
    expect(await apt.installed()).toEqual({})

    // An essential package: listed, with no Remove button.
    await page.getByRole('tab', { name: 'Find packages' }).click()
    await page.getByRole('searchbox', { name: 'Search packages' }).fill('hostd-base')
    await page.getByRole('button', { name: 'Install hostd-base' }).click()
    await waitForResult('Installing hostd-base')
    const found = page.getByRole('table', { name: 'Packages matching “hostd-base”' })
    await rowOf(found, 'hostd-base').getByText('Installed', { exact: true }).waitFor()
    expect(await found.getByRole('button', { name: 'Remove hostd-base' }).count()).toBe(0)
    await page.getByRole('tab', { name: /^Installed/ }).click()
    await rowOf(installedTable(), 'hostd-base').waitFor()
    expect(await page.getByRole('button', { name: 'Remove hostd-base' }).count()).toBe(0)
  })

  it('shows a viewer the lists and the search, with no control', async () => {
    const viewer = await ui.open('viewer', '/packages/search?q=demo')
    // The first search after the purges reads the catalog again: slow on a loaded machine.
    await rowOf(viewer.getByRole('table', { name: 'Packages matching “demo”' }), 'hostd-demo').waitFor({
      timeout: 90_000,
    })
    for (const name of ['Refresh package lists', 'Install hostd-demo', 'Remove hostd-demo'])
      expect(await viewer.getByRole('button', { name }).count(), name).toBe(0)
    await expectAccessible(viewer, 'packages viewer')
    await shot(viewer, 'packages-viewer')
    await viewer.context().close()
    ui.assertNoCspViolations()
  })
})
