/**
 * The desktop page in Debian's Chromium against the real daemon, bridged to a real screen: Xvfb plus x11vnc on
 * loopback (support/vnc.ts). X clients draw on that screen (an orange xmessage window) and report what reaches it
 * (xev prints the clicks and keys the page sends); xprop reads and sets the
 * root window's cut buffer, the X clipboard x11vnc exchanges with its viewers. The page is driven by role
 * and accessible name; the pixels are read from noVNC's canvas inside the "Remote screen" region.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { promisify } from 'node:util'
import type { Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../../../test/support/browser.ts'
import { SCREEN, startVnc, type Vnc } from './support/vnc.ts'

const run = promisify(execFile)
const ORANGE = [0xff, 0x88, 0x00] as const
const BLUE = [0x25, 0x63, 0xeb] as const
/** Where the X clients are placed on the 1024×768 screen. */
const XEV_WINDOW = { x: 560, y: 80, width: 400, height: 300 }

const screenRegion = (page: Page) => page.getByRole('region', { name: 'Remote screen' })

/** How many of the remote screen's pixels (noVNC's canvas, in screen coordinates) are near `rgb` (JPEG-tolerant). */
function countColour(page: Page, rgb: readonly number[]): Promise<number> {
  return screenRegion(page).evaluate((region, rgb) => {
    const canvas = region.querySelector('canvas')
    if (!canvas || canvas.width < 2) return 0
    const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data
    let n = 0
    for (let i = 0; i < data.length; i += 4) {
      if (
        Math.abs(data[i]! - rgb[0]!) < 24 &&
        Math.abs(data[i + 1]! - rgb[1]!) < 24 &&
        Math.abs(data[i + 2]! - rgb[2]!) < 24
      )
        n++
    }
    return n
  }, rgb)
}

/** The canvas as laid out on the page, and the factor from screen pixels to page pixels. */
async function canvasBox(page: Page) {
  const box = await screenRegion(page).evaluate((region) => {
    const r = region.querySelector('canvas')!.getBoundingClientRect()
    return { x: r.x, y: r.y, width: r.width, height: r.height }
  })
  return { ...box, scale: box.width / SCREEN.width }
}

/** Clicks the remote screen at a point in its own coordinates. */
async function clickRemote(page: Page, x: number, y: number): Promise<void> {
  const box = await canvasBox(page)
  await page.mouse.click(box.x + x * box.scale, box.y + y * box.scale)
}

/** Pages still open: a failed test's page is closed after it, so its connection does not count in the next test. */
const opened: Page[] = []

async function openDesktop(ui: UiHarness): Promise<Page> {
  const page = await ui.open('admin', '/desktop')
  opened.push(page)
  await page.getByRole('heading', { name: 'Desktop', level: 1 }).waitFor()
  await page.getByRole('status').getByText('Connected').waitFor({ timeout: 60_000 })
  return page
}

/** The bridge's TCP connections to the VNC server (established, from the daemon), as `ss` lists them. */
async function bridgeConnections(port: number): Promise<number> {
  const { stdout } = await run('ss', ['-tnH', 'state', 'established', `( dport = :${port} )`])
  return stdout.split('\n').filter((line) => line.trim()).length
}

describe('desktop page', { timeout: 180_000 }, () => {
  let vnc: Vnc
  let ui: UiHarness
  const clients: ChildProcess[] = []
  let xevOutput = ''
  /** Starts an X client on the test screen; stopped by pid in afterAll. */
  const xClient = (command: string, args: string[]) => {
    const child = spawn(command, ['-display', `:${vnc.display}`, ...args], { stdio: ['pipe', 'pipe', 'ignore'] })
    clients.push(child)
    return child
  }

  beforeAll(async () => {
    vnc = await startVnc()
    xClient('xmessage', [
      '-geometry',
      '460x260+60+80',
      '-bg',
      '#ff8800',
      '-fg',
      '#000000',
      'Drawn on the host by xmessage: hostd desktop page test',
    ])
    const xev = xClient('xev', [
      '-geometry',
      `${XEV_WINDOW.width}x${XEV_WINDOW.height}+${XEV_WINDOW.x}+${XEV_WINDOW.y}`,
      '-event',
      'mouse',
      '-event',
      'keyboard',
    ])
    xev.stdout!.on('data', (chunk: Buffer) => (xevOutput += chunk.toString()))
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
    for (const child of clients) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    await vnc?.stop()
  })

  it("shows the host's screen, live, and closes the bridge when the page closes", async () => {
    const page = await openDesktop(ui)
    await page.getByRole('status').getByText(`${SCREEN.width} × ${SCREEN.height}`).waitFor()
    // The orange window: 460×260 on the screen, most of it its background.
    await expect.poll(() => countColour(page, ORANGE), { timeout: 30_000 }).toBeGreaterThan(50_000)
    // A change on the host arrives: a blue window appears.
    const blue = xClient('xmessage', [
      '-geometry',
      '300x160+120+480',
      '-bg',
      '#2563eb',
      '-fg',
      '#ffffff',
      'A second window',
    ])
    await expect.poll(() => countColour(page, BLUE), { timeout: 30_000 }).toBeGreaterThan(20_000)
    // Scaled to the window: the 1024×768 screen is drawn smaller than its size, whole, keeping its proportions.
    const scaled = await canvasBox(page)
    expect(scaled.width).toBeLessThan(SCREEN.width)
    expect(scaled.height / scaled.width).toBeCloseTo(SCREEN.height / SCREEN.width, 1)
    await expectAccessible(page, 'desktop page')
    await screenshot(page, 'desktop-connected')
    blue.kill('SIGTERM')
    await expect.poll(() => countColour(page, BLUE), { timeout: 30_000 }).toBeLessThan(1000)

    await page.getByRole('switch', { name: 'Scale to window' }).uncheck()
    await expect.poll(async () => Math.round((await canvasBox(page)).width)).toBe(SCREEN.width)
    await page.getByRole('switch', { name: 'Scale to window' }).check()
    await expect.poll(async () => (await canvasBox(page)).width).toBeLessThan(SCREEN.width)

    // Full screen: the remote screen alone fills the display, until Escape.
    await page.getByRole('button', { name: 'Full screen' }).click()
    await expect
      .poll(() => page.evaluate(() => document.fullscreenElement?.getAttribute('aria-label')))
      .toBe('Remote screen')
    await page.evaluate(() => document.exitFullscreen())
    await expect.poll(() => page.evaluate(() => document.fullscreenElement === null)).toBe(true)

    await page.setViewportSize({ width: 390, height: 800 }) // a phone
    await expect.poll(async () => (await canvasBox(page)).width).toBeLessThan(390)
    await expectAccessible(page, 'desktop page at phone width')
    await screenshot(page, 'desktop-phone')

    expect(await bridgeConnections(vnc.port)).toBe(1)
    await page.close()
    await expect.poll(() => bridgeConnections(vnc.port), { timeout: 20_000 }).toBe(0)
    ui.assertNoCspViolations()
  })

  it('sends clicks, keys and Ctrl-Alt-Del to the host, and none in view-only mode', async () => {
    const page = await openDesktop(ui)
    const events = () => xevOutput
    xevOutput = ''
    await clickRemote(page, XEV_WINDOW.x + 200, XEV_WINDOW.y + 150)
    await expect.poll(events, { timeout: 20_000 }).toMatch(/ButtonPress event[^]*ButtonRelease event/)
    await page.keyboard.type('hq')
    await expect.poll(events, { timeout: 20_000 }).toMatch(/KeyPress event[^]*keysym 0x68, h\)[^]*keysym 0x71, q\)/)
    await page.getByRole('button', { name: 'Ctrl-Alt-Del' }).click()
    await expect
      .poll(events, { timeout: 20_000 })
      .toMatch(/KeyPress event[^]*Control_L[^]*KeyPress event[^]*Alt_L[^]*KeyPress event[^]*Delete/)

    await page.getByRole('switch', { name: 'View only' }).check()
    expect(await page.getByRole('button', { name: 'Ctrl-Alt-Del' }).isDisabled()).toBe(true)
    await page.waitForTimeout(500) // the last key releases from above may still be on their way
    xevOutput = ''
    await clickRemote(page, XEV_WINDOW.x + 100, XEV_WINDOW.y + 100)
    await page.keyboard.type('zz')
    // Something that does reach the screen, after the click and keys that must not: once it shows, they would have.
    const marker = xClient('xmessage', ['-geometry', '200x100+60+600', '-bg', '#2563eb', 'marker'])
    await expect.poll(() => countColour(page, BLUE), { timeout: 30_000 }).toBeGreaterThan(5000)
    marker.kill('SIGTERM')
    expect(xevOutput).not.toMatch(/ButtonPress|KeyPress/)
    await screenshot(page, 'desktop-view-only')
    await page.getByRole('switch', { name: 'View only' }).uncheck() // remembered in the browser: leave it off
  })

  it('shares the clipboard both ways', async () => {
    const page = await openDesktop(ui)
    await page.getByRole('button', { name: 'Clipboard' }).click()
    const box = page.getByRole('textbox', { name: 'Remote clipboard' })
    await box.fill('from the browser 42')
    await page.getByRole('button', { name: 'Send to the remote clipboard' }).click()
    // x11vnc puts text from a viewer in the root window's cut buffer (and claims PRIMARY, which its X clients ask it for).
    const cutBuffer = () =>
      run('xprop', ['-display', `:${vnc.display}`, '-root', 'CUT_BUFFER0']).then(
        (r) => r.stdout.trim(),
        () => '',
      )
    await expect.poll(cutBuffer, { timeout: 20_000 }).toBe('CUT_BUFFER0(STRING) = "from the browser 42"')

    // Text is copied on the host: an X client sets the cut buffer (as xterm does), and x11vnc sends it to its viewers.
    await run('xprop', [
      '-display',
      `:${vnc.display}`,
      '-root',
      '-format',
      'CUT_BUFFER0',
      '8s',
      '-set',
      'CUT_BUFFER0',
      'from the host 7',
    ])
    await expect.poll(() => box.inputValue(), { timeout: 20_000 }).toBe('from the host 7')
    await expectAccessible(page, 'desktop page, clipboard open')
    await screenshot(page, 'desktop-clipboard')
  })

  it('says why the connection ended, turns to the how-to when sharing stops, and reconnects', async () => {
    const page = await openDesktop(ui)
    await page.getByRole('button', { name: 'Disconnect' }).click()
    await page.getByRole('alert').filter({ hasText: 'Disconnected' }).waitFor()
    await expect.poll(() => bridgeConnections(vnc.port), { timeout: 20_000 }).toBe(0)
    await page.getByRole('button', { name: 'Reconnect' }).click()
    await page.getByRole('status').getByText('Connected').waitFor({ timeout: 60_000 })
    await expect.poll(() => countColour(page, ORANGE), { timeout: 30_000 }).toBeGreaterThan(50_000)

    await vnc.stopServer()
    const off = page.getByRole('alert').filter({ hasText: 'Screen sharing is off' })
    await off.waitFor({ timeout: 30_000 })
    await page.getByRole('heading', { name: 'How to turn on screen sharing' }).waitFor()
    await off.getByText(/HOSTD_DESKTOP_VNC/).waitFor()
    expect(await screenRegion(page).count()).toBe(0)
    await expectAccessible(page, 'desktop page, sharing off')
    await screenshot(page, 'desktop-sharing-off')

    await vnc.startServer()
    await page.getByRole('button', { name: 'Check again' }).click()
    await page.getByRole('status').getByText('Connected').waitFor({ timeout: 60_000 })
    await expect.poll(() => countColour(page, ORANGE), { timeout: 30_000 }).toBeGreaterThan(50_000)
  })

  it('is for admins: an operator is not offered the page', async () => {
    const page = await ui.open('operator', '/')
    opened.push(page)
    await page.getByRole('navigation', { name: 'Main' }).waitFor()
    expect(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Desktop' }).count()).toBe(0)
  })
})
