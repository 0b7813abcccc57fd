/**
 * The Processes page in Debian's Chromium against a real daemon (all built-in plugins) reading the real /proc:
 * the daemon's own process is in the table by its program's name, search, sorting, paging and refresh work, the
 * first sample's zeros are explained, no sideways scrolling on a phone, the network columns go through the real root
 * helper running the real nethogs (and say why when the helper is missing), an admin ends a process that ignores
 * TERM (End, then Force quit) through the real helper, and a viewer has neither the page nor the route.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Locator, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHelper, type RunningHelper } from '../../../helper/test/start-helper.ts'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../../../test/support/browser.ts'
import { processName } from '../src/adapters/process-parse.ts'

/** The table's body cells as text, row by row (the header row left out). */
function cells(table: Locator): Promise<string[][]> {
  return table.evaluate((t: HTMLTableElement) =>
    [...t.tBodies[0]!.rows].map((r) => [...r.cells].map((c) => c.textContent ?? '')),
  )
}

async function columnIndex(table: Locator, label: string): Promise<number> {
  // Every header cell, hidden ones too (Threads is hidden at some widths): the body's cells count them all.
  const headers = await table.locator('thead th').allTextContents()
  const index = headers.findIndex((h) => h.trim() === label)
  if (index < 0) throw new Error(`no column ${label} in ${headers.join(', ')}`)
  return index
}

async function column(table: Locator, label: string): Promise<string[]> {
  const index = await columnIndex(table, label)
  return (await cells(table)).map((row) => row[index]!)
}

/** The program names shown in the table, row by row (the command line under each left out). */
const names = (table: Locator) => table.locator('tbody .activity-name .cell-strong').allTextContents()

/** Whether the page scrolls sideways (it must not, on a phone). */
const scrollsSideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth > innerWidth)

const sortedBy = <T>(values: T[], compare: (a: T, b: T) => number) =>
  values.every((v, i) => i === 0 || compare(values[i - 1]!, v) <= 0)

async function waitIdle(page: Page) {
  await expect.poll(() => page.getByRole('button', { name: 'Refresh' }).isEnabled(), { timeout: 30_000 }).toBe(true)
}

describe('Processes page', { timeout: 180_000 }, () => {
  let ui: UiHarness
  let helperDir: string
  let helper: RunningHelper | undefined
  beforeAll(async () => {
    helperDir = await mkdtemp(join(tmpdir(), 'hostd-activity-helper-'))
    // The daemon points at a helper socket nobody serves yet; a test starts the real helper there later.
    ui = await startUi({ builtinPlugins: true, env: { HOSTD_HELPER_SOCKET: join(helperDir, 'helper.sock') } })
  }, 120_000)
  afterAll(async () => {
    await helper?.stop()
    await ui?.close()
    await rm(helperDir, { recursive: true, force: true })
  })

  it('as operator: explains the first sample, lists the daemon by pid, sorts by CPU and name, refreshes', async () => {
    const page = await ui.open('operator', '/')
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Processes' })
      .click({ timeout: 30_000 })
    await page.getByRole('heading', { name: 'Processes', level: 1 }).waitFor()
    const table = page.getByRole('table', { name: 'Processes' })

    // Nobody sampled before: every rate is 0, and the page says why.
    await page.getByText(/first sample since the daemon started/).waitFor({ timeout: 30_000 })
    await expectAccessible(page, 'activity, first sample')
    await screenshot(page, 'activity-first-sample')
    await page.getByRole('button', { name: 'Measure again' }).click()
    await expect
      .poll(() => page.getByText(/first sample since the daemon started/).count(), { timeout: 30_000 })
      .toBe(0)
    await waitIdle(page)

    // One page of 50 rows at most, in the page's own scroll (no box scrolling inside it), with a pager.
    const shown = (await cells(table)).length
    expect(shown).toBeGreaterThan(5)
    expect(shown).toBeLessThanOrEqual(50)
    const total = Number((await page.getByText(/^Sampled at /).textContent())!.match(/(\d+) processes/)![1])
    if (total > 50) await page.getByText(`1–50 of ${total}`).waitFor()
    expect(
      await table.evaluate((t) => t.closest('.table-wrap')!.scrollHeight <= t.closest('.table-wrap')!.clientHeight + 1),
    ).toBe(true)

    // The search narrows to the daemon's pid: its row names the program (argv[0]), not its main thread (comm).
    const search = page.getByRole('searchbox', { name: 'Search processes' })
    await search.fill(String(ui.daemon.pid))
    await expect.poll(async () => (await column(table, 'PID')).join(',')).toBe(String(ui.daemon.pid))
    expect(page.url()).toContain(`q=${ui.daemon.pid}`)
    const cmdline = await readFile(`/proc/${ui.daemon.pid}/cmdline`, 'utf8')
    const comm = (await readFile(`/proc/${ui.daemon.pid}/comm`, 'utf8')).trim()
    expect(await names(table)).toEqual([processName(cmdline, comm)])
    expect(await names(table)).toEqual(['node'])
    await search.fill('')
    await expect.poll(async () => (await cells(table)).length).toBeGreaterThan(5)
    const daemonRow = table
      .getByRole('row')
      .filter({ has: page.getByRole('cell', { name: String(ui.daemon.pid), exact: true }) })

    // Sorted by CPU (highest first) on arrival; by name ascending on a click; by CPU again ascending, then descending.
    const cpu = async () => (await column(table, 'CPU')).map((t) => Number.parseFloat(t))
    expect(sortedBy(await cpu(), (a, b) => b - a)).toBe(true)
    await page.getByRole('button', { name: 'Name', exact: true }).click()
    expect(await page.getByRole('columnheader', { name: 'Name' }).getAttribute('aria-sort')).toBe('ascending')
    const byName = await names(table)
    expect(sortedBy(byName, (a, b) => a.localeCompare(b, undefined, { numeric: true, sensitivity: 'base' }))).toBe(true)
    const pidsByName = await column(table, 'PID')
    await page.getByRole('button', { name: 'CPU', exact: true }).click()
    expect(sortedBy(await cpu(), (a, b) => a - b)).toBe(true)
    await page.getByRole('button', { name: 'CPU', exact: true }).click()
    expect(await page.getByRole('columnheader', { name: 'CPU' }).getAttribute('aria-sort')).toBe('descending')
    expect(sortedBy(await cpu(), (a, b) => b - a)).toBe(true)
    expect(await column(table, 'PID')).not.toEqual(pidsByName)

    // Refresh takes a new sample: its time moves on (clicked again until the clock shows a later second).
    const sampled = page.getByText(/^Sampled at /)
    const before = await sampled.textContent()
    await expect
      .poll(
        async () => {
          await page.getByRole('button', { name: 'Refresh' }).click()
          await waitIdle(page)
          return sampled.textContent()
        },
        { timeout: 60_000, interval: 1000 },
      )
      .not.toBe(before)
    expect(await daemonRow.count()).toBe(1)

    // Auto-refresh: the interval is kept in the address and new samples arrive by themselves.
    await page.getByRole('combobox', { name: 'Auto-refresh' }).selectOption('2')
    await page.getByText('Refreshing every 2 s').waitFor()
    expect(page.url()).toContain('every=2')
    const auto = await sampled.textContent()
    await expect.poll(() => sampled.textContent(), { timeout: 60_000 }).not.toBe(auto)
    await expectAccessible(page, 'processes')
    await screenshot(page, 'processes')
    await page.setViewportSize({ width: 390, height: 844 })
    expect(await scrollsSideways(page)).toBe(false)
    await expectAccessible(page, 'processes on a phone')
    await screenshot(page, 'processes-phone')
    ui.assertNoCspViolations()
    await page.close() // its auto-refresh stops with it
  })

  it('network columns: a clear message without the root helper, real nethogs rates with it', async () => {
    const page = await ui.open('operator', '/activity')
    const table = page.getByRole('table', { name: 'Processes' })
    await table.waitFor({ timeout: 30_000 })
    const toggle = page.getByRole('switch', { name: 'Network columns' })
    // click, not check: the switch turns back off as soon as the refusal arrives, which may be before check() looks.
    await toggle.click()
    await page
      .getByRole('alert')
      .filter({ hasText: 'Network columns need the root helper' })
      .waitFor({ timeout: 30_000 })
    await expect.poll(() => toggle.isChecked(), { timeout: 10_000 }).toBe(false)
    expect(await page.getByRole('columnheader', { name: 'Net in' }).count()).toBe(0)
    await expectAccessible(page, 'activity, network unavailable')
    await screenshot(page, 'activity-network-unavailable')

    helper = await startHelper({ dir: helperDir })
    await toggle.check()
    await page.getByRole('columnheader', { name: 'Net in' }).waitFor({ timeout: 60_000 })
    await waitIdle(page)
    expect(await toggle.isChecked()).toBe(true)
    expect(page.url()).toContain('network=1')
    const netIn = await column(table, 'Net in')
    expect(netIn.length).toBeGreaterThan(5)
    expect(netIn.every((t) => /^\d+(\.\d+)? (B|KiB|MiB|GiB)\/s$/.test(t))).toBe(true)
    const traces = (await helper.log()).filter((e) => e.action === 'net.processTraffic')
    expect(traces.length).toBeGreaterThanOrEqual(1)
    await expectAccessible(page, 'activity, network columns')
    await screenshot(page, 'activity-network')
    // An operator may look, not end anything.
    expect(await table.getByRole('button', { name: /^End / }).count()).toBe(0)
    ui.assertNoCspViolations()
  })

  it('as admin: ends a process that ignores TERM: a red confirmation naming it, then Force quit', async () => {
    // A python3 that names its main thread "MainThread" and ignores TERM (a stuck program).
    const code = `import ctypes, signal, time
ctypes.CDLL(None).prctl(15, b'MainThread', 0, 0, 0)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print('ready', flush=True)
time.sleep(600)`
    helper ??= await startHelper({ dir: helperDir }) // started by the test before; here when run alone
    const child: ChildProcess = spawn('/usr/bin/python3', ['-c', code], { stdio: ['ignore', 'pipe', 'inherit'] })
    const ended = new Promise<string | null>((r) => child.once('exit', (_, signal) => r(signal)))
    try {
      await new Promise((r) => child.stdout!.once('data', r))
      const page = await ui.open('admin', `/activity?q=${child.pid}`)
      const label = `python3 (PID ${child.pid})`
      await page.getByRole('button', { name: `End ${label}` }).click({ timeout: 30_000 })
      const ask = page.getByRole('dialog', { name: `End ${label}?` })
      const end = ask.getByRole('button', { name: 'End process' })
      expect(await end.evaluate((b) => b.classList.contains('btn-danger'))).toBe(true)
      await expectAccessible(page, 'end process confirmation')
      await screenshot(page, 'processes-end-confirm')
      await end.click()
      // TERM is ignored: a few seconds later Force quit is offered, confirmed again.
      const force = page.getByRole('dialog', { name: `Force ${label} to quit?` })
      await force.getByRole('button', { name: 'Force quit' }).waitFor({ timeout: 30_000 })
      expect(child.exitCode).toBeNull()
      await screenshot(page, 'processes-force-quit')
      await force.getByRole('button', { name: 'Force quit' }).click()
      await page.getByText(`${label} was forced to quit`).waitFor()
      expect(await ended).toBe('SIGKILL')
      const audit = (await ui.daemon
        .fetch('/api/audit?range=24h&limit=20', { headers: { authorization: `Bearer ${ui.adminToken}` } })
        .then((r) => r.json())) as { items: { action: string; detail: { signal: string; pid: number } }[] }
      const signals = audit.items.filter((e) => e.action === 'process.signal' && e.detail.pid === child.pid)
      expect(signals.map((e) => e.detail.signal).sort()).toEqual(['KILL', 'TERM'])
      // hostd itself is refused with the server's reason, at the dialog.
      await page.goto(`${ui.url}/activity?q=${ui.daemon.pid}`)
      await page.getByRole('button', { name: `End node (PID ${ui.daemon.pid})` }).click({ timeout: 30_000 })
      await page.getByRole('button', { name: 'End process' }).click()
      await page
        .getByRole('dialog')
        .getByText(/This is hostd itself/)
        .waitFor()
      await page.setViewportSize({ width: 390, height: 844 })
      expect(await scrollsSideways(page)).toBe(false)
      await screenshot(page, 'processes-end-refused-phone')
      ui.assertNoCspViolations()
    } finally {
      child.kill('SIGKILL')
    }
  })

  it('as viewer: no Processes entry, the page is not there, and the route answers 403', async () => {
    const page = await ui.open('viewer', '/activity')
    const nav = page.getByRole('navigation', { name: 'Main' })
    await nav.getByRole('link', { name: 'Overview' }).waitFor()
    await page.getByRole('heading', { name: 'Page not found' }).waitFor({ timeout: 30_000 })
    expect(await nav.getByRole('link', { name: 'Processes' }).count()).toBe(0)
    const forged = await page.evaluate(async () => {
      const res = await fetch('/api/activity/processes')
      return { status: res.status, body: await res.json() }
    })
    expect(forged.status).toBe(403)
    expect(forged.body.error).toBe('HOSTD_AUTH_FORBIDDEN')
    await expectAccessible(page, 'activity as viewer')
    await screenshot(page, 'activity-viewer')
  })
})
