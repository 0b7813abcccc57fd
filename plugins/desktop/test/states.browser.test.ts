/**
 * The desktop page's other states in Chromium, against a real daemon bridged to x11vnc with a password (VNC
 * Authentication) on an Xvfb screen: the password prompt (a wrong password named as such, the right one connects),
 * and signing out in another tab ending the connection with a message.
 */
import type { Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
  expectAccessible,
  screenshot,
  signOutInAnotherTab,
  startUi,
  type UiHarness,
} from '../../../test/support/browser.ts'
import { SCREEN, startVnc, type Vnc } from './support/vnc.ts'

const PASSWORD = 'vnc-pw-7'

describe('desktop page states', { timeout: 180_000 }, () => {
  let vnc: Vnc
  let ui: UiHarness
  const opened: Page[] = []
  beforeAll(async () => {
    vnc = await startVnc({ password: PASSWORD })
    ui = await startUi({
      builtinPlugins: true,
      env: { HOSTD_BUILTIN_PLUGINS: 'desktop', HOSTD_DESKTOP_VNC: `127.0.0.1:${vnc.port}` },
    })
  }, 120_000)
  afterEach(async () => {
    for (const page of opened.splice(0)) await page.context().close()
  })
  afterAll(async () => {
    await ui?.close()
    await vnc?.stop()
  })

  async function openDesktop(): Promise<Page> {
    const page = await ui.open('admin', '/desktop')
    opened.push(page)
    await page.getByRole('heading', { name: 'Desktop', level: 1 }).waitFor()
    await page.getByRole('status').getByText('password protected').waitFor()
    return page
  }

  async function signIn(page: Page, password: string): Promise<void> {
    const dialog = page.getByRole('dialog', { name: 'The VNC server asks for a password' })
    await dialog.waitFor({ timeout: 60_000 })
    await dialog.getByLabel('VNC password').fill(password)
    await dialog.getByRole('button', { name: 'Connect' }).click()
  }

  it('asks for the VNC password, names a wrong one, and connects with the right one', async () => {
    const page = await openDesktop()
    await page.getByRole('dialog', { name: 'The VNC server asks for a password' }).waitFor({ timeout: 60_000 })
    await expectAccessible(page, 'desktop page, password prompt')
    await screenshot(page, 'desktop-password')
    await signIn(page, 'wrong-one')
    await page
      .getByRole('alert')
      .filter({ hasText: 'The VNC server refused the password' })
      .waitFor({ timeout: 30_000 })
    await screenshot(page, 'desktop-password-refused')

    await page.getByRole('button', { name: 'Reconnect' }).click()
    await signIn(page, PASSWORD)
    await page.getByRole('status').getByText('Connected').waitFor({ timeout: 60_000 })
    expect(await page.getByRole('alert').count()).toBe(0)
    // The screen arrived: noVNC sized its canvas from ServerInit.
    const size = await page.getByRole('region', { name: 'Remote screen' }).evaluate((region) => {
      const canvas = region.querySelector('canvas')
      return canvas ? `${canvas.width}x${canvas.height}` : null
    })
    expect(size).toBe(`${SCREEN.width}x${SCREEN.height}`)
  })

  it('ends the connection when the user signs out in another tab, and says so', async () => {
    const page = await openDesktop()
    await signIn(page, PASSWORD)
    await page.getByRole('status').getByText('Connected').waitFor({ timeout: 60_000 })
    const release = await signOutInAnotherTab(page)
    await page.getByRole('alert').filter({ hasText: 'Your session ended' }).waitFor({ timeout: 30_000 })
    expect(await page.getByRole('button', { name: 'Reconnect' }).isDisabled()).toBe(true)
    await screenshot(page, 'desktop-signed-out')
    await release()
    await page.getByRole('heading', { name: 'Sign in' }).waitFor({ timeout: 20_000 })
  })
})
