/**
 * The network page in Debian's Chromium against a real daemon, the real root helper and a real NetworkManager in
 * its own network namespace (test/nm-namespace.ts): DNS changed from the page, an IPv4 change confirmed within the
 * window, one reverted on request, one left to run out after a reload (NetworkManager restores it), the notice
 * while the helper is stopped, no Network page for a non-admin, and with NetworkManager not running, the kernel's
 * interfaces and how to start it. Every check of the host reads nmcli directly.
 */
import { spawn } from 'node:child_process'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../../../test/support/browser.ts'
import { startHelper, type RunningHelper } from '../../../helper/test/start-helper.ts'
import { startNetworkManager, type NetworkManagerUnderTest } from './nm-namespace.ts'

const NAME = 'Office LAN'
const WINDOW_SECONDS = 20

describe('network page (real NetworkManager, real helper)', { timeout: 180_000 }, () => {
  let nm: NetworkManagerUnderTest
  let helper: RunningHelper
  let ui: UiHarness
  let page: Page

  const fields = () => nm.fields(NAME, 'ipv4.method,ipv4.addresses,ipv4.dns,GENERAL.STATE,IP4.ADDRESS')
  const card = () => page.getByRole('region', { name: NAME })
  /** Polls nmcli until `probe` holds (NetworkManager applies changes asynchronously). */
  const nmShows = async (probe: (f: Record<string, string>) => boolean) => {
    for (let attempt = 0; ; attempt++) {
      const f = await fields()
      if (probe(f)) return
      if (attempt > 300) throw new Error(`nmcli still shows ${JSON.stringify(f)}`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  beforeAll(async () => {
    nm = await startNetworkManager()
    await nm.nmcli(
      'connection',
      'add',
      'type',
      'ethernet',
      'ifname',
      nm.device,
      'con-name',
      NAME,
      'ipv4.method',
      'manual',
      'ipv4.addresses',
      '10.77.0.2/24',
      'ipv4.gateway',
      '10.77.0.1',
      'ipv4.dns',
      '10.77.0.1',
      'ipv6.method',
      'disabled',
    )
    await nmShows((f) => f['GENERAL.STATE'] === 'activated')
    helper = await startHelper({ dbusSystemBus: nm.busAddress })
    ui = await startUi({
      builtinPlugins: true,
      env: { HOSTD_HELPER_SOCKET: helper.socket, HOSTD_NETWORK_CONFIRM_SECONDS: String(WINDOW_SECONDS) },
    })
    page = await ui.open('admin', '/network')
  }, 150_000)
  afterAll(async () => {
    await ui?.close()
    await helper?.stop()
    await nm?.stop()
  })

  const editIpv4 = async (address: string) => {
    await card()
      .getByRole('button', { name: `Edit IPv4 of ${NAME}` })
      .click()
    const dialog = page.getByRole('dialog', { name: `IPv4 of ${NAME}` })
    await dialog.getByRole('combobox', { name: 'Configure IPv4' }).selectOption('manual')
    await dialog.getByRole('textbox', { name: 'IP address' }).fill(address)
    await dialog.getByRole('textbox', { name: 'Subnet mask' }).fill('255.255.255.0')
    await dialog.getByRole('textbox', { name: 'Router (optional)' }).fill('10.77.0.1')
    await dialog.getByRole('button', { name: 'Apply' }).click()
    await dialog.waitFor({ state: 'detached' })
    return page.getByRole('region', { name: `Keep the new settings of ${NAME}?` })
  }

  it('lists the connection as nmcli has it, and changes its DNS servers from the page', async () => {
    await card().getByText('10.77.0.2', { exact: true }).waitFor()
    await card().getByText('Manual', { exact: true }).waitFor()
    await expectAccessible(page, 'network')
    await screenshot(page, 'network')

    await card()
      .getByRole('button', { name: `Edit DNS of ${NAME}` })
      .click()
    const dialog = page.getByRole('dialog', { name: `DNS servers of ${NAME}` })
    await dialog.getByRole('textbox', { name: 'DNS server 1' }).fill('10.77.0.53')
    await dialog.getByRole('textbox', { name: 'DNS server 2' }).fill('9.9.9.9')
    await dialog.getByRole('textbox', { name: 'DNS server 3' }).fill('not-an-address')
    await dialog.getByRole('button', { name: 'Save DNS servers' }).click()
    await dialog.getByText(/match the requested format|format/i).waitFor() // the browser's own check, before any request
    await expectAccessible(page, 'DNS dialog with an error')
    await screenshot(page, 'network-dns-dialog')
    await dialog.getByRole('textbox', { name: 'DNS server 3' }).fill('')
    await dialog.getByRole('button', { name: 'Save DNS servers' }).click()
    await dialog.waitFor({ state: 'detached' })
    await card().getByText('10.77.0.53, 9.9.9.9').waitFor()
    await nmShows((f) => f['ipv4.dns'] === '10.77.0.53,9.9.9.9')
  })

  it('an IPv4 change waits for confirmation with a countdown; kept in time, it stays', async () => {
    const pending = await editIpv4('10.77.0.20')
    await pending.getByRole('timer').waitFor()
    await nmShows((f) => f['ipv4.addresses'] === '10.77.0.20/24')
    expect(
      await card()
        .getByRole('button', { name: `Edit IPv4 of ${NAME}` })
        .isDisabled(),
    ).toBe(true) // one pending change at a time
    await expectAccessible(page, 'network: pending change')
    await screenshot(page, 'network-confirm')
    await pending.getByRole('button', { name: 'Keep these settings' }).click()
    await pending.waitFor({ state: 'detached' })
    await page.getByText(`${NAME} keeps its new settings`).waitFor()
    await card().getByText('10.77.0.20', { exact: true }).waitFor()
    await new Promise((r) => setTimeout(r, 1000)) // the kept checkpoint is gone: nothing rolls back
    expect((await fields())['ipv4.addresses']).toBe('10.77.0.20/24')
  })

  it('Revert now puts the previous settings back at once', async () => {
    const pending = await editIpv4('10.77.0.21')
    await nmShows((f) => f['ipv4.addresses'] === '10.77.0.21/24')
    await pending.getByRole('button', { name: 'Revert now' }).click()
    await pending.waitFor({ state: 'detached' })
    await nmShows((f) => f['ipv4.addresses'] === '10.77.0.20/24')
    await card().getByText('10.77.0.20', { exact: true }).waitFor()
  })

  it('a change nobody confirms survives a reload as a countdown, then NetworkManager restores the old settings', async () => {
    await editIpv4('10.77.0.22')
    await page.reload() // the countdown comes back from GET /api/system/network/pending
    const pending = page.getByRole('region', { name: `Keep the new settings of ${NAME}?` })
    await pending.getByRole('timer').waitFor()
    await page
      .getByText(/Time is up: the change to Office LAN was not confirmed/)
      .waitFor({ timeout: (WINDOW_SECONDS + 15) * 1000 })
    await nmShows((f) => f['ipv4.addresses'] === '10.77.0.20/24')
    await card().getByText('10.77.0.20', { exact: true }).waitFor({ timeout: 15_000 })
    await screenshot(page, 'network-reverted')
  })

  it('says that Admin Privileges are missing while the helper is stopped; only admins have the page', async () => {
    await helper.stop(true)
    await page.reload()
    await page.getByText('Admin Privileges are not available: the root helper is not running').waitFor()
    await expectAccessible(page, 'network without the helper')
    await screenshot(page, 'network-no-helper')
    helper = await startHelper({ dbusSystemBus: nm.busAddress, dir: helper.dir })
    // The helper listens before it can reach NetworkManager: the button is pressed once the daemon can read the
    // services again, as a person would press it after starting the helper.
    const services = () =>
      ui.daemon
        .fetch('/api/system/network/services', { headers: { authorization: `Bearer ${ui.adminToken}` } })
        .then((r) => r.status)
    await expect.poll(services, { timeout: 30_000 }).toBe(200)
    await page.getByRole('button', { name: 'Check again' }).click()
    await card().getByText('10.77.0.20', { exact: true }).waitFor()

    const operator = await ui.open('operator', '/')
    await operator.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Overview' }).waitFor()
    expect(
      await operator.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Network' }).count(),
    ).toBe(0)
    expect((await operator.request.get(`${ui.url}/api/system/network/services`)).status()).toBe(403)
    ui.assertNoCspViolations()
  })

  it('NetworkManager not running: the interfaces are still listed from the kernel, with how to start it', async () => {
    // A real system bus with no NetworkManager on it: nmcli answers "NetworkManager is not running".
    const bus = spawn('dbus-daemon', ['--session', '--nofork', '--print-address=1'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    try {
      const address = await new Promise<string>((r) => bus.stdout!.once('data', (d: Buffer) => r(d.toString().trim())))
      await helper.stop(true)
      helper = await startHelper({ dbusSystemBus: address, dir: helper.dir })
      const page = await ui.open('admin', '/network')
      const callout = page.getByRole('alert').filter({ hasText: 'NetworkManager is not running' })
      await callout.waitFor({ timeout: 30_000 })
      await callout.getByText('sudo systemctl start NetworkManager').waitFor()
      await callout.getByRole('button', { name: 'Copy sudo systemctl start NetworkManager' }).waitFor()
      const interfaces = page.getByRole('table', { name: 'Interfaces' })
      const lo = interfaces.getByRole('row').filter({ has: page.getByRole('cell', { name: 'lo', exact: true }) })
      await lo.getByText('127.0.0.1/8').waitFor()
      await lo.getByText('Unknown').waitFor() // the loopback's operstate
      await expectAccessible(page, 'network without NetworkManager')
      await screenshot(page, 'network-nm-down')
      await page.setViewportSize({ width: 390, height: 844 })
      expect(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth)).toBe(true)
      await screenshot(page, 'network-nm-down-phone')
    } finally {
      bus.kill()
    }
  })
})
