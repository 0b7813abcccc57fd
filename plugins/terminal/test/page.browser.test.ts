/**
 * The terminal page in Debian's Chromium against the real daemon, whose shells run as the unprivileged test account
 * in real PTYs: a command's output read on screen (through xterm's screen-reader tree, what a screen reader reads),
 * `stty size` following the browser window, a big paste arriving whole, the shell exiting and Reconnect, the cap of
 * sessions, and signing out in another tab ending the shell with a message.
 */
import { rm } from 'node:fs/promises'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  expectAccessible,
  screenshot,
  signOutInAnotherTab,
  startUi,
  type UiHarness,
} from '../../../test/support/browser.ts'
import { ensureTestAccount } from '../../../test/support/unix-user.ts'

/** The terminal's rows as a screen reader gets them (the page's "Screen reader mode" switch). */
const rows = (page: Page) => page.getByRole('region', { name: 'Terminal' }).getByRole('listitem')
const row = (page: Page, text: RegExp) => rows(page).filter({ hasText: text }).first()

/** Types into the terminal as a user does: focus it, then keys. */
async function type(page: Page, text: string): Promise<void> {
  await page.getByRole('textbox', { name: 'Terminal input' }).focus()
  await page.keyboard.type(text)
  await page.keyboard.press('Enter')
}

async function openTerminal(ui: UiHarness, options: { screenReader?: boolean } = {}): Promise<Page> {
  const page = await ui.open('admin', '/terminal')
  await page.getByRole('heading', { name: 'Terminal', level: 1 }).waitFor()
  if (options.screenReader !== false) {
    const toggle = page.getByRole('switch', { name: 'Screen reader mode' })
    if (!(await toggle.isChecked())) await toggle.check()
  }
  await page.getByRole('status').getByText('Connected').waitFor()
  await row(page, /\$\s*$/).waitFor() // the shell's prompt: typing before it would mix the echo into it
  return page
}

describe('terminal page', { timeout: 180_000 }, () => {
  let ui: UiHarness
  beforeAll(async () => {
    const account = await ensureTestAccount()
    ui = await startUi({
      builtinPlugins: true,
      env: { HOSTD_BUILTIN_PLUGINS: 'terminal', HOSTD_TERMINAL_USER: account.name, HOSTD_TERMINAL_MAX_SESSIONS: '2' },
    })
  }, 120_000)
  afterAll(() => ui?.close())

  it("runs a command and shows its output, under the page's CSP", async () => {
    const page = await openTerminal(ui)
    await expect.poll(() => page.getByRole('heading', { name: 'Terminal', level: 1 }).isVisible()).toBe(true)
    await page.getByText(/A login shell on this host as hostd-test/).waitFor()
    await type(page, 'echo $((6*7))')
    await row(page, /^\s*42\s*$/).waitFor()
    await expectAccessible(page, 'terminal page')
    await screenshot(page, 'terminal-connected')
    await page.context().close()
    ui.assertNoCspViolations()
  })

  it('fits the window: stty size shows the rows and columns after a resize', async () => {
    const page = await openTerminal(ui)
    const sizeShown = async () => {
      const text = await page
        .getByRole('status')
        .getByText(/^\d+ × \d+$/)
        .textContent()
      const [cols, rows] = text!.split(' × ').map(Number)
      return { cols: cols!, rows: rows! }
    }
    const before = await sizeShown()
    await page.setViewportSize({ width: 900, height: 600 })
    await expect.poll(async () => (await sizeShown()).cols, { timeout: 10_000 }).toBeLessThan(before.cols)
    const after = await sizeShown()
    expect(after.rows).toBeLessThan(before.rows)
    await type(page, 'stty size')
    await row(page, new RegExp(`^\\s*${after.rows} ${after.cols}\\s*$`)).waitFor()
    await page.setViewportSize({ width: 390, height: 800 }) // a phone
    await expect.poll(async () => (await sizeShown()).cols, { timeout: 10_000 }).toBeLessThan(after.cols)
    const phone = await sizeShown()
    await type(page, 'stty size')
    await row(page, new RegExp(`^\\s*${phone.rows} ${phone.cols}\\s*$`)).waitFor()
    await expectAccessible(page, 'terminal page at phone width')
    await screenshot(page, 'terminal-phone')
    await page.context().close()
  })

  it('pastes a big text whole, and copies the selection', async () => {
    const page = await openTerminal(ui)
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'])
    const file = `/tmp/hostd-paste-${process.pid}-${Date.now()}.txt`
    try {
      // 2,000 lines of 60 characters: 122,000 bytes with the line ends, far over one PTY buffer.
      const lines = Array.from({ length: 2000 }, (_, i) => `${String(i).padStart(6, '0')} ${'x'.repeat(53)}`)
      // Paste once cat runs: the shell turns bracketed paste off when it runs a command, and a paste still
      // bracketed would reach cat with the brackets (the byte count below would say so).
      await type(page, `echo paste-ready; cat > ${file}`)
      await row(page, /^paste-ready\s*$/).waitFor()
      await page.evaluate((text) => navigator.clipboard.writeText(text), `${lines.join('\n')}\n`)
      await page.getByRole('button', { name: 'Paste' }).click()
      // Ctrl-D ends cat's input after the paste (same socket, so in order). Not waiting for the paste's echo: when
      // the PTY's output was full for a moment, Linux keeps the rest of a cooked-mode echo pending until the next
      // key (observed here: the file was whole, its last lines' echo came with the next keystroke).
      await row(page, /^\d{6} x{53}\s*$/).waitFor() // the paste went out (its echo began)
      await page.getByRole('textbox', { name: 'Terminal input' }).focus()
      await page.keyboard.press('Control+D')
      await type(page, `clear; wc -l -c < ${file}`)
      await row(page, /^\s*2000 122000\s*$/).waitFor()

      await type(page, 'echo copy-me-$((2+3))')
      const output = row(page, /^copy-me-5\s*$/)
      await output.waitFor()
      const copy = page.getByRole('button', { name: 'Copy' })
      expect(await copy.isDisabled()).toBe(true)
      // Double-click the word on screen (the rows are drawn under the screen-reader tree at the same place).
      const box = (await output.boundingBox())!
      await page.mouse.dblclick(box.x + 20, box.y + box.height / 2)
      await expect.poll(() => copy.isEnabled()).toBe(true)
      await copy.click()
      await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toMatch(/copy-me-5/)
    } finally {
      await rm(file, { force: true })
      await page.context().close()
    }
  })

  it('is not wedged by a flood: Ctrl-C stops it and the shell answers', async () => {
    const page = await openTerminal(ui)
    await type(page, 'yes flood-line')
    await row(page, /^flood-line\s*$/).waitFor()
    await page.waitForTimeout(3000) // let it run: megabytes of output
    const started = performance.now()
    await page.keyboard.press('Control+C')
    await type(page, 'echo after-$((6*7))')
    await row(page, /^after-42\s*$/).waitFor({ timeout: 60_000 })
    console.log(
      `terminal page: after 3 s of \`yes\`, Ctrl-C and a command answered in ${Math.round(performance.now() - started)} ms`,
    )
    await page.context().close()
  })

  it('says when the shell exits, and Reconnect (or Enter) opens a new one', async () => {
    const page = await openTerminal(ui)
    await type(page, 'exit 3')
    const notice = page.getByRole('alert').filter({ hasText: 'The shell exited with status 3' })
    await notice.waitFor()
    await expectAccessible(page, 'terminal page, closed')
    await screenshot(page, 'terminal-exited')
    await page.getByRole('button', { name: 'Reconnect' }).click()
    await page.getByRole('status').getByText('Connected').waitFor()
    expect(await notice.count()).toBe(0)
    await type(page, 'echo again-$((40+2))')
    await row(page, /^again-42\s*$/).waitFor()
    await type(page, 'exit')
    await page.getByRole('alert').filter({ hasText: 'The shell exited' }).waitFor()
    await page.keyboard.press('Enter')
    await page.getByRole('status').getByText('Connected').waitFor()
    await page.context().close()
  })

  it('refuses a terminal over the cap with the reason', async () => {
    const first = await openTerminal(ui)
    const second = await openTerminal(ui)
    const third = await ui.open('admin', '/terminal')
    await third
      .getByRole('alert')
      .filter({ hasText: 'Too many terminals open' })
      .getByText(/HOSTD_TERMINAL_MAX_SESSIONS=2/)
      .waitFor()
    await screenshot(third, 'terminal-too-many')
    await second.context().close()
    await third.getByRole('button', { name: 'Reconnect' }).click()
    await third.getByRole('status').getByText('Connected').waitFor()
    for (const p of [first, third]) await p.context().close()
  })

  it('ends the shell when the user signs out in another tab, and says so', async () => {
    const page = await openTerminal(ui)
    await type(page, 'echo before-sign-out')
    await row(page, /^before-sign-out\s*$/).waitFor()
    const release = await signOutInAnotherTab(page)
    await page
      .getByRole('alert')
      .filter({ hasText: 'Your session ended' })
      .getByText(/signed out/)
      .waitFor()
    expect(await page.getByRole('button', { name: 'Reconnect' }).isDisabled()).toBe(true)
    await screenshot(page, 'terminal-signed-out')
    await release()
    await page.getByRole('heading', { name: 'Sign in' }).waitFor({ timeout: 20_000 })
    await page.context().close()
  })
})
