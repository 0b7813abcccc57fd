/**
 * The shell and the kernel's pages in Debian's Chromium, against a real daemon (all built-in plugins loaded, so
 * the overview has the metrics and system cards) serving the real bundle. Pages are driven by role and accessible
 * name only; every page is checked with axe and saved as a screenshot (light and dark).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { waitFor } from '../support/daemon.ts'
import {
  expectAccessible,
  gotoRetrying,
  PASSWORD,
  screenshot,
  signInThroughForm,
  startUi,
  type UiHarness,
} from '../support/browser.ts'

// Generous: a loaded machine makes a browser slow; nothing here measures time.
describe('web UI: first run, sign-in and the kernel pages', { timeout: 120_000 }, () => {
  let ui: UiHarness
  beforeAll(async () => {
    ui = await startUi({ builtinPlugins: true, setup: false })
  }, 120_000)
  afterAll(() => ui?.close())
  afterEach(() => ui.assertNoCspViolations())

  it('serves first-run setup while no user exists, then the overview', async () => {
    const page = await ui.newPage()
    await gotoRetrying(page, `${ui.url}/users`)
    await page.getByRole('heading', { name: 'Create the first administrator' }).waitFor()
    expect(new URL(page.url()).pathname).toBe('/setup')
    await expectAccessible(page, 'setup')
    await screenshot(page, 'setup')
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
    await page.getByLabel('Repeat the password').fill('something else entirely')
    await page.getByRole('button', { name: 'Create administrator' }).click()
    await expect.poll(() => page.getByText('The two passwords differ').isVisible()).toBe(true)
    await page.getByLabel('Repeat the password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Create administrator' }).click()
    await page.getByRole('heading', { name: 'Overview' }).waitFor()
    expect(await (await ui.daemon.fetch('/api/setup')).json()).toEqual({ needsSetup: false })
    await page.context().close()
  })

  it('signs in (a wrong password is refused at the form), shows the nav, and signs out', async () => {
    const page = await ui.newPage()
    await gotoRetrying(page, ui.url)
    await signInThroughForm(page, { username: 'admin', password: 'not the password' })
    await page
      .getByRole('alert')
      .filter({ hasText: /password/i })
      .waitFor()
    await expectAccessible(page, 'sign-in')
    await screenshot(page, 'sign-in')
    await signInThroughForm(page, ui.admin)
    await page.getByRole('heading', { name: 'Overview' }).waitFor()
    const nav = page.getByRole('navigation', { name: 'Main' })
    for (const name of ['Overview', 'Users', 'Audit log']) await nav.getByRole('link', { name }).waitFor()
    await page.getByRole('button', { name: /account menu/ }).click()
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByRole('heading', { name: 'Sign in' }).waitFor()
    // The session is gone on the server too: the API refuses the old cookie.
    expect(await page.evaluate(async () => (await fetch('/api/auth/me')).status)).toBe(401)
    await page.context().close()
  })

  it('the overview charts receive new points from the live stream', async () => {
    const page = await ui.open('admin', '/')
    const cpu = page.getByRole('img', { name: 'CPU usage chart' })
    await cpu.waitFor()
    await page.getByText(/^Live · /).waitFor({ timeout: 15_000 })
    const points = async () => Number((await cpu.getAttribute('data-points')) ?? 0)
    const first = await points()
    await waitFor(async () => (await points()) >= first + 2, 20_000, 200)
    for (const name of ['Memory used chart', 'Load average (1 min) chart', 'Network chart', 'Disk chart'])
      await page.getByRole('img', { name }).waitFor()
    await page.getByRole('heading', { name: 'This server' }).waitFor()
    await page.getByText('Host name').waitFor()
    // The system plugin's updates card (the version and commit are on the System page, not here).
    await page.getByRole('heading', { name: 'Updates', exact: true }).waitFor()
    await page.getByText('System updates').waitFor()
    await page.getByRole('tab', { name: '24 hours' }).click()
    await page.getByText('History, refreshed every minute').waitFor()
    await page.getByRole('tab', { name: '1 hour (live)' }).click()
    await page.getByText(/^Live · /).waitFor({ timeout: 15_000 })
    await expectAccessible(page, 'overview')
    await screenshot(page, 'overview')
    await page.context().close()
  })

  it('an admin creates a user who then signs in; the audit log lists that sign-in', async () => {
    const page = await ui.open('admin', '/users')
    await page.getByRole('heading', { name: 'Users' }).waitFor()
    await page.getByRole('cell', { name: /admin/ }).first().waitFor()
    await expectAccessible(page, 'users')
    await screenshot(page, 'users')
    await page.getByRole('button', { name: 'Add user' }).click()
    const dialog = page.getByRole('dialog', { name: 'Add a user' })
    await dialog.getByRole('textbox', { name: 'User name' }).fill('carol')
    await dialog.getByLabel('Password').fill('short')
    await dialog.getByRole('combobox', { name: 'Role' }).selectOption('operator')
    await dialog.getByRole('button', { name: 'Add user' }).click()
    await dialog
      .getByText(/8 characters|too short|at least/i)
      .first()
      .waitFor()
    // Focus stays in the dialog (the page behind is inert).
    expect(await page.evaluate(() => document.activeElement?.closest('dialog') !== null)).toBe(true)
    await expectAccessible(page, 'users: add dialog')
    await screenshot(page, 'users-add')
    await dialog.getByLabel('Password').fill(PASSWORD)
    await dialog.getByRole('button', { name: 'Add user' }).click()
    await page.getByRole('cell', { name: 'carol', exact: true }).waitFor()
    await page.getByText('carol can now sign in').waitFor()

    const carol = await ui.newPage()
    await gotoRetrying(carol, ui.url)
    await signInThroughForm(carol, { username: 'carol', password: PASSWORD })
    await carol.getByRole('heading', { name: 'Overview' }).waitFor()
    await carol.context().close()

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click()
    await page.getByRole('heading', { name: 'Audit log' }).waitFor()
    const row = page.getByRole('row').filter({ hasText: 'auth.login' }).filter({ hasText: 'carol' })
    await row.first().waitFor()
    await page.getByRole('tab', { name: 'All' }).click()
    expect(new URL(page.url()).search).toBe('?range=all')
    await row.first().waitFor()
    await page.reload()
    await page.getByRole('tab', { name: 'All', selected: true }).waitFor()
    await expectAccessible(page, 'audit')
    await screenshot(page, 'audit')
    await page.context().close()
  })

  it('removes a user only after the name is typed', async () => {
    await ui.createUser('viewer', 'dave')
    const page = await ui.open('admin', '/users')
    await page.getByRole('button', { name: 'Remove dave' }).click()
    const dialog = page.getByRole('dialog', { name: 'Remove dave?' })
    const confirm = dialog.getByRole('button', { name: 'Remove user' })
    expect(await confirm.isDisabled()).toBe(true)
    await screenshot(page, 'users-remove')
    await dialog.getByRole('textbox', { name: /Type dave to confirm/ }).fill('dave')
    await confirm.click()
    await page.getByText('dave was removed').waitFor()
    await expect.poll(() => page.getByRole('cell', { name: 'dave', exact: true }).count()).toBe(0)
    // Focus went back to the page, not lost in the removed dialog.
    expect(await page.evaluate(() => document.activeElement?.tagName)).not.toBe('DIALOG')
    await page.context().close()
  })

  it('as a viewer, Users and Audit are absent and a forged admin request is still 403', async () => {
    const page = await ui.open('viewer', '/')
    await page.getByRole('heading', { name: 'Overview' }).waitFor()
    const nav = page.getByRole('navigation', { name: 'Main' })
    await nav.getByRole('link', { name: 'Overview' }).waitFor()
    expect(await nav.getByRole('link', { name: 'Users' }).count()).toBe(0)
    expect(await nav.getByRole('link', { name: 'Audit log' }).count()).toBe(0)
    await gotoRetrying(page, `${ui.url}/users`)
    await page.getByRole('heading', { name: 'Not available to you' }).waitFor()
    const forged = await page.evaluate(async () => {
      const res = await fetch('/api/users', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'mallory', password: 'correct horse battery', role: 'admin' }),
      })
      return { status: res.status, body: await res.json() }
    })
    expect(forged).toEqual({ status: 403, body: { error: 'HOSTD_AUTH_FORBIDDEN', message: expect.any(String) } })
    await page.context().close()
  })

  it('an ended session returns to sign-in and then back to the page', async () => {
    const account = await ui.createUser('admin', 'erin')
    const page = await ui.open(account, '/account')
    await page.getByRole('heading', { name: 'Your account' }).waitFor()
    const token = (await page.context().cookies()).find((c) => c.name === 'svc_session')!.value
    const out = await ui.daemon.fetch('/api/auth/logout', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
    })
    expect(out.status).toBe(204)
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click()
    await page.getByText('Your session ended').waitFor()
    expect(new URL(page.url()).searchParams.get('next')).toBe('/audit')
    await signInThroughForm(page, account)
    await page.getByRole('heading', { name: 'Audit log' }).waitFor()
    expect(new URL(page.url()).pathname).toBe('/audit')
    await page.context().close()
  })

  it('loads anyway when the network drops the first load of its code, of a page and of a read (ERR_NETWORK_CHANGED)', async () => {
    const page = await ui.open('viewer', '/account')
    await page.getByRole('heading', { name: 'Your account' }).waitFor()
    // Each of these fails once, as Chromium fails loads in flight when the machine's interfaces change: a static
    // import of the entry (the boot retry in index.html), the audit page's own chunk (a lazy page) and the shell's
    // first read. Routing also turns Chromium's HTTP cache off, so the reload fetches everything.
    const html = await (await ui.daemon.fetch('/')).text()
    const entry = /<script type="module" src="([^"]+)"/.exec(html)![1]!
    const staticImport = [...html.matchAll(/<link rel="modulepreload" href="([^"]+)">/g)]
      .map((m) => m[1]!)
      .find((href) => href !== entry)!
    expect(staticImport).toMatch(/^\/ui\/assets\/chunk-/)
    const seen = new Map<string, number>()
    // ERR_FAILED rather than a reset: Chromium itself sends a request again after a reset on a reused connection.
    const dropFirst = async (pattern: string | RegExp, times = 1) =>
      page.route(pattern, (route) => {
        const path = new URL(route.request().url()).pathname
        const n = (seen.get(path) ?? 0) + 1
        seen.set(path, n)
        return n <= times ? route.abort('failed') : route.continue()
      })
    // Twice: the preload and the entry's own load of it both fail, so only the boot retry can load the page.
    await dropFirst(`**${staticImport}`, 2)
    await dropFirst('**/api/auth/me')
    await page.reload()
    await page.getByRole('heading', { name: 'Your account' }).waitFor()
    expect(seen.get(staticImport)).toBeGreaterThanOrEqual(3)
    expect(seen.get('/api/auth/me')).toBeGreaterThanOrEqual(2)

    const nav = page.getByRole('navigation', { name: 'Main' })
    await dropFirst(/\/ui\/assets\/chunk-[^/]*\.js$/, 2)
    seen.clear()
    await nav.getByRole('link', { name: 'Overview' }).click()
    await page.getByRole('heading', { name: 'Overview', exact: true }).waitFor()
    expect([...seen.values()].some((n) => n >= 3)).toBe(true) // a chunk dropped twice was fetched a third time
    expect(await page.getByText(/could not be loaded/).count()).toBe(0)
    await page.context().close()
  })

  it('changes the own password (a wrong current password shows at its field)', async () => {
    const account = await ui.createUser('operator', 'frank')
    const page = await ui.open(account, '/account')
    await page.getByRole('heading', { name: 'Your account' }).waitFor()
    await expectAccessible(page, 'account')
    await screenshot(page, 'account')
    const fill = async (current: string) => {
      await page.getByLabel('Current password').fill(current)
      await page.getByLabel('New password', { exact: true }).fill('a much better passphrase')
      await page.getByLabel('Repeat the new password').fill('a much better passphrase')
      await page.getByRole('button', { name: 'Change password' }).click()
    }
    await fill('wrong one')
    const current = page.getByRole('textbox', { name: 'Current password' })
    await expect.poll(() => current.getAttribute('aria-invalid')).toBe('true')
    await fill(PASSWORD)
    await page.getByText('Password changed').waitFor()
    await page.getByRole('button', { name: /account menu/ }).click()
    await page.getByRole('button', { name: 'Sign out' }).click()
    await signInThroughForm(page, { username: 'frank', password: 'a much better passphrase' })
    await page.getByRole('heading', { name: 'Overview' }).waitFor()
    await page.context().close()
  })

  it('shows a 404 page for an unknown path, keyboard first (skip link), and fits a phone', async () => {
    const page = await ui.open('admin', '/no/such/page')
    await page.getByRole('heading', { name: 'Page not found' }).waitFor()
    await expectAccessible(page, '404')
    await screenshot(page, 'not-found')
    // From the top of the document, the first Tab reaches the skip link.
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur())
    await page.keyboard.press('Tab')
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content')
    await page.setViewportSize({ width: 390, height: 800 })
    await gotoRetrying(page, `${ui.url}/`)
    await page.getByRole('heading', { name: 'Overview' }).waitFor()
    const menu = page.getByRole('button', { name: 'Main menu' })
    await menu.click()
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Users' }).click()
    await page.getByRole('heading', { name: 'Users' }).waitFor()
    expect(await menu.getAttribute('aria-expanded')).toBe('false')
    await screenshot(page, 'phone-users')
    await page.context().close()
  })
})

export type { Page }
