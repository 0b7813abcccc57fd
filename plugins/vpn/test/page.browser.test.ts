/**
 * The VPN page in a real browser against the real daemon, whose vpn plugin talks to a STAND-IN of tailscaled's
 * LocalAPI (test/support/localapi-standin.ts): tailscaled and Tailscale's control plane cannot run on this machine.
 * The stand-in follows tailscale's own handlers; the test plays the control server's part with `finishLogin()`.
 * An admin logs in (the page opens the login URL in a new tab and waits), sees Running, changes every setting
 * (checked in the masked edits the stand-in received and in GET /api/vpn), picks and clears an exit node,
 * disconnects, reconnects and logs out; a viewer sees the state with no controls and no login URL; then tailscaled
 * goes away and the page says what is missing.
 */
import { writeFile } from 'node:fs/promises'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../../../test/support/browser.ts'
import { startStandInLocalApi, type StandInLocalApi } from './support/localapi-standin.ts'

describe('VPN page (stand-in LocalAPI)', { timeout: 180_000 }, () => {
  let standIn: StandInLocalApi
  let ui: UiHarness
  let page: Page

  /** GET /api/vpn as the first admin (admins see the pending login URL). */
  const vpnState = async () =>
    (await (await ui.daemon.fetch('/api/vpn', { headers: { authorization: `Bearer ${ui.adminToken}` } })).json()) as any
  const connection = () => page.getByRole('region', { name: 'Connection' })
  const settings = () => page.getByRole('form', { name: 'VPN settings' })
  const save = async () => {
    const before = standIn.edits.length
    await settings().getByRole('button', { name: 'Save settings' }).click()
    await expect.poll(() => standIn.edits.length, { timeout: 20_000 }).toBe(before + 1)
    await page.getByText('VPN settings saved').first().waitFor()
    return standIn.edits.at(-1)!
  }

  beforeAll(async () => {
    standIn = await startStandInLocalApi({ state: 'NeedsLogin' })
    ui = await startUi({ builtinPlugins: true, env: { HOSTD_TAILSCALE_SOCKET: standIn.socketPath } })
  }, 120_000)
  afterAll(async () => {
    await ui?.close()
    await standIn?.stop().catch(() => undefined)
    await standIn?.remove()
  })

  it('logs in: the login URL opens in a new tab without an opener, the page waits, then shows Running', async () => {
    page = await ui.open('admin', '/vpn')
    await page.getByRole('heading', { name: 'VPN', level: 1 }).waitFor()
    await connection().getByText('Logged out', { exact: true }).waitFor()
    await expectAccessible(page, 'vpn logged out')
    await screenshot(page, 'vpn-logged-out')

    // The control server is not modelled: its login page is answered in the browser.
    await page.context().route('https://login.example.invalid/**', (route) =>
      route.fulfill({
        contentType: 'text/html',
        body: '<!doctype html><title>Tailscale login (stand-in)</title><h1>Log in</h1>',
      }),
    )
    const popup = page.context().waitForEvent('page')
    await connection().getByRole('button', { name: 'Log in to Tailscale' }).click()
    const tab = await popup
    await tab.waitForLoadState()
    const pending = await vpnState()
    expect(pending).toMatchObject({ loginPending: true, backendState: 'NeedsLogin' })
    expect(tab.url()).toBe(pending.authUrl)
    expect(await tab.evaluate(() => window.opener)).toBeNull()
    await tab.close()

    await connection().getByRole('progressbar', { name: 'Waiting for the login to finish' }).waitFor()
    expect(await connection().getByRole('link', { name: 'Open the login page' }).getAttribute('href')).toBe(
      pending.authUrl,
    )
    await expectAccessible(page, 'vpn login waiting')
    await screenshot(page, 'vpn-login-waiting')

    // A viewer meanwhile sees that a login waits, but never its URL.
    const viewer = await ui.open('viewer', '/vpn')
    await viewer.getByText('A login was started by an admin and waits to be finished.').waitFor()
    expect(await viewer.getByRole('link', { name: 'Open the login page' }).count()).toBe(0)
    expect(await viewer.content()).not.toContain(pending.authUrl)
    await viewer.context().close()

    standIn.finishLogin()
    await connection().getByText('Connected', { exact: true }).waitFor({ timeout: 20_000 })
    await page.getByText(/Logged in: this machine is on the tailnet admin@example.com/).waitFor()
    expect(await connection().getByRole('progressbar').count()).toBe(0)
    expect(await vpnState()).toMatchObject({
      backendState: 'Running',
      loggedIn: true,
      loginPending: false,
      authUrl: null,
    })

    const peers = page.getByRole('table', { name: 'Devices in the tailnet' })
    for (const name of ['vps-amsterdam', 'alices-macbook-pro', 'nas'])
      await peers
        .getByRole('row', { name: new RegExp(name, 'i') })
        .first()
        .waitFor()
    await page.getByRole('region', { name: 'This machine' }).getByText('100.101.102.103').waitFor()
    await page.getByRole('region', { name: 'Tailnet' }).getByText('admin@example.com').waitFor()
    await expectAccessible(page, 'vpn running')
    await screenshot(page, 'vpn-running')
  })

  it('sorts the devices by any column', async () => {
    const peers = page.getByRole('table', { name: 'Devices in the tailnet' })
    const firstCells = async () => (await peers.getByRole('row').all()).slice(1, 4)
    const names = async () =>
      Promise.all((await firstCells()).map(async (r) => (await r.getByRole('cell').first().innerText()).split('\n')[0]))
    expect(await names()).toEqual(['alices-macbook-pro', 'nas', 'vps-amsterdam'])
    await peers.getByRole('button', { name: 'Traffic' }).click()
    expect(await names()).toEqual(['alices-macbook-pro', 'nas', 'vps-amsterdam'])
    await peers.getByRole('button', { name: 'Traffic' }).click()
    expect(await names()).toEqual(['vps-amsterdam', 'nas', 'alices-macbook-pro'])
    await peers.getByRole('button', { name: 'Status' }).click()
    expect((await names())[2]).toBe('alices-macbook-pro')
  })

  it('changes every setting, sending only the changed fields; the page and GET /api/vpn follow', async () => {
    const form = settings()
    // One field: only it is sent.
    await form.getByRole('switch', { name: 'Tailscale SSH server' }).click()
    expect(await save()).toEqual({ RunSSH: true, RunSSHSet: true })
    await page.getByRole('region', { name: 'Remote access' }).getByText('On', { exact: true }).waitFor()
    expect((await vpnState()).prefs.ssh).toBe(true)

    // A machine name that is no DNS label is refused at its field; nothing is sent.
    const edits = standIn.edits.length
    await form.getByRole('textbox', { name: 'Machine name' }).fill('-not-a-label')
    await form.getByRole('button', { name: 'Save settings' }).click()
    await form.getByText(/one DNS label/).waitFor()
    expect(standIn.edits.length).toBe(edits)
    await expectAccessible(page, 'vpn settings error')

    // All the others at once, with an exit node.
    await form.getByRole('textbox', { name: 'Machine name' }).fill('homebox')
    await form.getByRole('switch', { name: 'Use subnet routes' }).click()
    await form.getByRole('switch', { name: "Use the tailnet's DNS" }).click()
    await form.getByRole('switch', { name: 'Shields up' }).click()
    await form.getByRole('combobox', { name: 'Exit node' }).selectOption({ label: 'vps-amsterdam' })
    const edit = await save()
    expect(edit).toEqual({
      RouteAll: true,
      RouteAllSet: true,
      CorpDNS: false,
      CorpDNSSet: true,
      ShieldsUp: true,
      ShieldsUpSet: true,
      ExitNodeID: 'nEXIT1CNTRL',
      ExitNodeIDSet: true,
      ExitNodeIP: '',
      ExitNodeIPSet: true,
      Hostname: 'homebox',
      HostnameSet: true,
    })
    expect((await vpnState()).prefs).toEqual({
      acceptRoutes: true,
      acceptDns: false,
      ssh: true,
      shieldsUp: true,
      exitNodeId: 'nEXIT1CNTRL',
      hostname: 'homebox',
      wantRunning: true,
      loggedOut: false,
    })
    // The page shows the new state: the form's values, the exit node in the tailnet card and the devices table.
    await page.getByRole('region', { name: 'This machine' }).getByText('homebox').waitFor()
    await page.getByRole('region', { name: 'Tailnet' }).getByText('vps-amsterdam').waitFor()
    await page
      .getByRole('table', { name: 'Devices in the tailnet' })
      .getByRole('row', { name: /vps-amsterdam/ })
      .getByText('In use')
      .waitFor()
    expect(await form.getByRole('switch', { name: 'Shields up' }).isChecked()).toBe(true)
    expect(await form.getByRole('switch', { name: "Use the tailnet's DNS" }).isChecked()).toBe(false)
    expect(await form.getByRole('combobox', { name: 'Exit node' }).inputValue()).toBe('nEXIT1CNTRL')
    await screenshot(page, 'vpn-settings-saved')

    // Nothing changed: nothing is sent.
    await form.getByRole('button', { name: 'Save settings' }).click()
    await page.getByText('Nothing to save: no setting changed.').waitFor()
    expect(standIn.edits.length).toBe(edits + 1)

    // Clear the exit node.
    await form.getByRole('combobox', { name: 'Exit node' }).selectOption({ value: '' })
    expect(await save()).toEqual({ ExitNodeID: '', ExitNodeIDSet: true, ExitNodeIP: '', ExitNodeIPSet: true })
    await page
      .getByRole('region', { name: 'Tailnet' })
      .getByText(/None: internet traffic leaves from here/)
      .waitFor()
    expect((await vpnState()).exitNode).toBeNull()
  })

  it('shows a viewer the state and the settings, with no control and no login URL', async () => {
    const viewer = await ui.open('viewer', '/vpn')
    await viewer.getByRole('region', { name: 'Connection' }).getByText('Connected', { exact: true }).waitFor()
    await viewer
      .getByRole('table', { name: 'Devices in the tailnet' })
      .getByRole('row', { name: /vps-amsterdam/ })
      .waitFor()
    await viewer.getByRole('region', { name: 'Settings' }).getByText('homebox').waitFor()
    expect(await viewer.getByRole('switch').count()).toBe(0)
    expect(await viewer.getByRole('combobox').count()).toBe(0)
    for (const name of ['Log in to Tailscale', 'Log out…', 'Save settings'])
      expect(await viewer.getByRole('button', { name }).count(), name).toBe(0)
    await viewer.getByText(/shields up refuses every connection/).waitFor()
    await expectAccessible(viewer, 'vpn viewer')
    await screenshot(viewer, 'vpn-viewer')
    await viewer.setViewportSize({ width: 390, height: 844 })
    await viewer.getByRole('table', { name: 'Devices in the tailnet' }).waitFor()
    await expectAccessible(viewer, 'vpn viewer at phone width')
    await screenshot(viewer, 'vpn-viewer-phone')
    await viewer.context().close()
  })

  it('disconnects (after confirming), reconnects, and logs out (after confirming)', async () => {
    const toggle = connection().getByRole('switch', { name: 'VPN connection' })
    expect(await toggle.isChecked()).toBe(true)
    await toggle.click()
    const ask = page.getByRole('dialog', { name: 'Disconnect from the tailnet?' })
    await ask.getByRole('button', { name: 'Cancel' }).click()
    expect(await toggle.isChecked()).toBe(true)
    expect(standIn.backendState()).toBe('Running')

    await toggle.click()
    await ask.getByRole('button', { name: 'Disconnect' }).click()
    await connection().getByText('Disconnected', { exact: true }).waitFor()
    expect(await vpnState()).toMatchObject({ backendState: 'Stopped', prefs: { wantRunning: false } })
    expect(await toggle.isChecked()).toBe(false)
    await expectAccessible(page, 'vpn disconnected')
    await screenshot(page, 'vpn-disconnected')

    await toggle.click()
    await connection().getByText('Connected', { exact: true }).waitFor()
    expect((await vpnState()).backendState).toBe('Running')

    await connection().getByRole('button', { name: 'Log out…' }).click()
    await page.getByRole('dialog', { name: 'Log out of Tailscale?' }).getByRole('button', { name: 'Log out' }).click()
    await connection().getByText('Logged out', { exact: true }).waitFor()
    await connection().getByRole('button', { name: 'Log in to Tailscale' }).waitFor()
    expect(await vpnState()).toMatchObject({
      backendState: 'NeedsLogin',
      loggedIn: false,
      self: null,
      prefs: { loggedOut: true, wantRunning: false },
    })
    expect(await page.getByRole('table', { name: 'Devices in the tailnet' }).count()).toBe(0)
  })

  it('says what is missing when tailscaled is not installed, then not running', async () => {
    await standIn.stop()
    await page.getByRole('button', { name: 'Refresh' }).click()
    await page.getByRole('heading', { name: 'VPN', level: 1 }).waitFor()
    await page.getByText('Tailscale is not installed on this host', { exact: true }).waitFor()
    await page.getByText(standIn.socketPath).first().waitFor()
    await expectAccessible(page, 'vpn not installed')
    await screenshot(page, 'vpn-not-installed')

    await writeFile(standIn.socketPath, '') // a socket file nobody answers on, as a crashed tailscaled leaves
    await page.getByRole('button', { name: 'Check again' }).click()
    await page.getByText('tailscaled is not running', { exact: true }).waitFor()
    await expectAccessible(page, 'vpn not running')
    await screenshot(page, 'vpn-not-running')
    ui.assertNoCspViolations()
  })
})
