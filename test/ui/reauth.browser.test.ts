/**
 * "Sudo mode" in Debian's Chromium against a real daemon (issue 27): once the sign-in is older than the
 * re-authentication window (10 s here, HOSTD_REAUTH_SECONDS; 5 minutes by default), a change to users or account
 * security asks for the password in a dialog, refuses a wrong one at its field, and then carries the change out
 * without the person doing it again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectAccessible, PASSWORD, screenshot, startUi, type UiHarness } from '../support/browser.ts'

const WINDOW_SECONDS = 10

describe('web UI: the password asked for again', { timeout: 120_000 }, () => {
  let ui: UiHarness
  beforeAll(async () => {
    ui = await startUi({ env: { HOSTD_REAUTH_SECONDS: String(WINDOW_SECONDS) } })
  }, 120_000)
  afterAll(() => ui?.close())

  it('asks for the password before adding a user once the sign-in is older than the window, then adds them', async () => {
    const signedInAt = Date.now()
    const page = await ui.open('admin', '/users')
    await page.getByRole('button', { name: 'Add user' }).waitFor()
    // The window is a duration of wall-clock time: waiting it out is the point of this test.
    await page.waitForTimeout(Math.max(0, signedInAt + (WINDOW_SECONDS + 1) * 1000 - Date.now()))

    await page.getByRole('button', { name: 'Add user' }).click()
    const add = page.getByRole('dialog', { name: 'Add a user' })
    await add.getByLabel('User name').fill('mallory')
    await add.getByLabel('Password', { exact: true }).fill('a good long password')
    await add.getByRole('button', { name: 'Add user' }).click()

    const confirm = page.getByRole('dialog', { name: 'Confirm your password' })
    await confirm.getByText('This change needs your password').waitFor()
    await confirm.getByLabel('Password').fill('not the password')
    await confirm.getByRole('button', { name: 'Confirm' }).click()
    await expect.poll(() => confirm.getByLabel('Password').getAttribute('aria-invalid')).toBe('true')
    await expectAccessible(page, 'reauth dialog')
    await screenshot(page, 'reauth-dialog')
    await confirm.getByLabel('Password').fill(PASSWORD)
    await confirm.getByRole('button', { name: 'Confirm' }).click()

    // The change the person asked for goes through by itself.
    await page.getByText('mallory can now sign in').waitFor()
    await page.getByRole('row', { name: /mallory/ }).waitFor()
    expect(await confirm.count()).toBe(0)
    const users = (await (
      await ui.daemon.fetch('/api/users', { headers: { authorization: `Bearer ${ui.adminToken}` } })
    ).json()) as { username: string }[]
    expect(users.map((u) => u.username)).toContain('mallory')
    // The harness's own admin session is as old: creating a user through it gives the password again too.
    expect(await ui.createUser('viewer', 'made-after-the-window')).toMatchObject({ username: 'made-after-the-window' })
    await page.context().close()
  })

  it('cancelling the question cancels the change and says why', async () => {
    const signedInAt = Date.now()
    const page = await ui.open('admin', '/account/tokens')
    await page.getByText('No API tokens').waitFor()
    await page.waitForTimeout(Math.max(0, signedInAt + (WINDOW_SECONDS + 1) * 1000 - Date.now()))
    await page.getByRole('button', { name: 'New token' }).first().click()
    const dialog = page.getByRole('dialog', { name: 'New API token' })
    await dialog.getByLabel('Name').fill('never made')
    await dialog.getByRole('button', { name: 'Create token' }).click()
    const confirm = page.getByRole('dialog', { name: 'Confirm your password' })
    await confirm.getByRole('button', { name: 'Cancel' }).click()
    await dialog.getByText(/Confirm your password to continue/).waitFor()
    await screenshot(page, 'reauth-cancelled')
    await page.context().close()
  })
})
