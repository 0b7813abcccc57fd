/**
 * The terminal page's other states in Chromium, each against its own real daemon: unavailable (a daemon running as
 * root with no HOSTD_TERMINAL_USER: the page shows the plugin's reason and what to set), and closed for inactivity
 * (HOSTD_TERMINAL_IDLE_SECONDS).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../../../test/support/browser.ts'
import { ensureTestAccount } from '../../../test/support/unix-user.ts'

describe('terminal page states', { timeout: 180_000 }, () => {
  let ui: UiHarness | undefined
  afterEach(async () => {
    await ui?.close()
    ui = undefined
  })

  it('shows why the terminal is unavailable and what to set', async () => {
    expect(process.getuid?.()).toBe(0) // the condition under test: a root daemon without HOSTD_TERMINAL_USER
    ui = await startUi({ builtinPlugins: true, env: { HOSTD_BUILTIN_PLUGINS: 'terminal' } })
    const page = await ui.open('admin', '/')
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Terminal' }).click()
    const alert = page.getByRole('alert').filter({ hasText: 'The terminal is unavailable' })
    await alert.getByText(/HOSTD_TERMINAL_USER is not set/).waitFor()
    await page.getByRole('heading', { name: 'How to turn it on' }).waitFor()
    expect(await page.getByRole('region', { name: 'Terminal' }).count()).toBe(0)
    await page.getByRole('button', { name: 'Check again' }).click()
    await alert.waitFor()
    await expectAccessible(page, 'terminal page, unavailable')
    await screenshot(page, 'terminal-unavailable')
    ui.assertNoCspViolations()
  })

  it('says when the terminal was closed for inactivity', async () => {
    const account = await ensureTestAccount()
    ui = await startUi({
      builtinPlugins: true,
      env: { HOSTD_BUILTIN_PLUGINS: 'terminal', HOSTD_TERMINAL_USER: account.name, HOSTD_TERMINAL_IDLE_SECONDS: '3' },
    })
    const page = await ui.open('admin', '/terminal')
    const notice = page.getByRole('alert').filter({ hasText: 'Closed after a while without activity' })
    await notice.getByText(/No input and no output for 3 s/).waitFor({ timeout: 30_000 })
    await expectAccessible(page, 'terminal page, idle')
    await screenshot(page, 'terminal-idle')
  })
})
