/**
 * Account security in Debian's Chromium against a real daemon (issue 15): turning on two-factor from the account
 * page with a code computed from the secret the page shows, signing in with a code and with a recovery code (once),
 * API tokens (the secret shown once, then revoked), seeing and ending sessions with a second browser signed out, the
 * admin's view of a user, the policy, and the enrollment a policy forces. Driven by role and accessible name; every
 * page and state is checked with axe and saved as a screenshot.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import {
  expectAccessible,
  gotoRetrying,
  PASSWORD,
  screenshot,
  signInThroughForm,
  startUi,
  type Account,
  type UiHarness,
} from '../support/browser.ts'
import { currentStep, totp } from '../support/two-factor.ts'

describe('web UI: two-factor, API tokens and sessions', { timeout: 180_000 }, () => {
  let ui: UiHarness
  beforeAll(async () => {
    ui = await startUi()
  }, 120_000)
  afterAll(() => ui?.close())
  afterEach(() => ui.assertNoCspViolations())

  const json = { 'content-type': 'application/json' }
  const api = async (path: string, token: string, body?: unknown, method = body === undefined ? 'GET' : 'POST') => {
    const res = await ui.daemon.fetch(path, {
      method,
      headers: { ...json, authorization: `Bearer ${token}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, body: (res.status === 204 ? null : await res.json()) as any }
  }
  const signInApi = async (a: Account) =>
    (
      (await (
        await ui.daemon.fetch('/api/auth/login', {
          method: 'POST',
          headers: { ...json, 'x-svc-client': 'test' },
          body: JSON.stringify(a),
        })
      ).json()) as { token: string }
    ).token
  /**
   * Two-factor for an account through the API, as the account page would: answers the secret, the step used, and the
   * session it enrolled from (the only one left: enrolling ends the others).
   */
  async function enrollByApi(a: Account): Promise<{ secret: string; step: number; session: string }> {
    const session = await signInApi(a)
    const { secret } = (await api('/api/me/two-factor/start', session, { password: a.password })).body
    const step = currentStep()
    expect((await api('/api/me/two-factor/confirm', session, { code: totp(secret, step) })).status).toBe(200)
    return { secret, step, session }
  }
  async function signOut(page: Page) {
    await page.getByRole('button', { name: /account menu/ }).click()
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByRole('heading', { name: 'Sign in' }).waitFor()
  }
  const secondStep = (page: Page) => page.getByRole('heading', { name: 'Two-factor sign-in' }).waitFor()

  it('turns on two-factor from the account page; from then on signing in needs a code, and a recovery code works once', async () => {
    const account = await ui.createUser('operator', 'grace')
    const page = await ui.open(account, '/account/two-factor')
    await page.getByRole('heading', { name: 'Your account' }).waitFor()
    expect(await page.getByRole('tab', { name: 'Two-factor sign-in' }).getAttribute('aria-selected')).toBe('true')
    await page.getByText('Signing in needs only your password').waitFor()
    await expectAccessible(page, 'account two-factor off')
    await screenshot(page, 'account-two-factor-off')

    await page.getByRole('button', { name: 'Turn on two-factor' }).click()
    const dialog = page.getByRole('dialog', { name: 'Turn on two-factor sign-in' })
    await dialog.getByLabel('Your password').fill('not my password')
    await dialog.getByRole('button', { name: 'Continue' }).click()
    await expect.poll(() => dialog.getByLabel('Your password').getAttribute('aria-invalid')).toBe('true')
    await dialog.getByLabel('Your password').fill(PASSWORD)
    await dialog.getByRole('button', { name: 'Continue' }).click()
    await dialog.getByRole('img', { name: /QR code/ }).waitFor()
    // The key as the page shows it for typing by hand (grouped by four), read like a person would.
    const secret = (await dialog.getByLabel('Secret key').inputValue()).replace(/\s/g, '')
    expect(secret).toMatch(/^[A-Z2-7]{32}$/)
    await expectAccessible(page, 'two-factor enrollment')
    await screenshot(page, 'two-factor-enroll-scan')
    const step = currentStep()
    await dialog.getByLabel('Code from your app').fill(totp(secret, step))
    await dialog.getByRole('button', { name: 'Turn on two-factor' }).click()
    const list = dialog.getByRole('list', { name: 'Recovery codes' })
    await list.waitFor()
    const codes = (await list.getByRole('listitem').allTextContents()).map((c) => c.trim())
    expect(codes).toHaveLength(10)
    await dialog.getByRole('button', { name: 'Copy codes' }).waitFor()
    await dialog.getByRole('link', { name: 'Download' }).waitFor()
    await expectAccessible(page, 'recovery codes')
    await screenshot(page, 'two-factor-recovery-codes')
    await dialog.getByRole('button', { name: 'I have saved my recovery codes' }).click()
    await page.getByText('10 of 10 recovery codes left.').waitFor()
    await screenshot(page, 'account-two-factor-on')

    // Signing in now takes a code; a wrong one is refused at its field.
    await signOut(page)
    await signInThroughForm(page, account)
    await secondStep(page)
    await expectAccessible(page, 'sign-in second step')
    await screenshot(page, 'sign-in-code')
    const field = page.getByLabel('Authentication code')
    await field.fill(totp(secret, step) === '123456' ? '654321' : '123456')
    await page.getByRole('button', { name: 'Verify' }).click()
    await expect.poll(() => field.getAttribute('aria-invalid')).toBe('true')
    await field.fill(totp(secret, step + 1))
    await page.getByRole('button', { name: 'Verify' }).click()
    await page.getByRole('heading', { name: 'Overview' }).waitFor()

    // A recovery code instead of the app: it works once.
    for (const attempt of ['first', 'again'] as const) {
      await signOut(page)
      await signInThroughForm(page, account)
      await secondStep(page)
      await page.getByRole('button', { name: 'Lost your phone? Use a recovery code' }).click()
      await page.getByLabel('Recovery code').fill(codes[0]!)
      if (attempt === 'first') await screenshot(page, 'sign-in-recovery-code')
      await page.getByRole('button', { name: 'Verify' }).click()
      if (attempt === 'first') await page.getByRole('heading', { name: 'Overview' }).waitFor()
    }
    await expect.poll(() => page.getByLabel('Recovery code').getAttribute('aria-invalid')).toBe('true')
    await page.getByText(/Wrong code/).waitFor()
    await screenshot(page, 'sign-in-recovery-code-used')
    await page.context().close()
  })

  it('a user sees their sessions, ends one, and the browser holding it is signed out', async () => {
    const account = await ui.createUser('viewer', 'heidi')
    // Two browsers, both signed in through the form (so each session has Chromium's user agent).
    const a = await ui.newPage()
    await gotoRetrying(a, `${ui.url}/account/sessions`)
    await signInThroughForm(a, account)
    await a.getByRole('heading', { name: 'Where you are signed in' }).waitFor()
    const b = await ui.newPage()
    await gotoRetrying(b, `${ui.url}/`)
    await signInThroughForm(b, account)
    await b.getByRole('heading', { name: 'Overview' }).waitFor()

    await gotoRetrying(a, `${ui.url}/account/sessions`)
    const table = a.getByRole('table', { name: 'Your sessions' })
    await expect.poll(() => table.getByRole('row').count()).toBe(3) // a header row and two sessions
    await table.getByText('This session').waitFor()
    await expectAccessible(a, 'sessions')
    await screenshot(a, 'account-sessions')

    await table.getByRole('button', { name: /^End session: Chrome on Linux/ }).click()
    await a.getByRole('dialog', { name: 'End this session?' }).getByRole('button', { name: 'End session' }).click()
    await a.getByText('The session was ended').waitFor()
    await expect.poll(() => table.getByRole('row').count()).toBe(2)
    // The other browser finds out at its next request (the nav refreshes every few seconds) and shows sign-in.
    await b.getByRole('heading', { name: 'Sign in' }).waitFor({ timeout: 30_000 })
    await b.getByText('Your session ended').waitFor()
    await screenshot(b, 'session-ended-elsewhere')

    // End all others: a third browser is signed out too, this one stays.
    const c = await ui.newPage()
    await gotoRetrying(c, `${ui.url}/`)
    await signInThroughForm(c, account)
    await c.getByRole('heading', { name: 'Overview' }).waitFor()
    await gotoRetrying(a, `${ui.url}/account/sessions`)
    await expect.poll(() => table.getByRole('row').count()).toBe(3)
    await a.getByRole('button', { name: 'End all other sessions' }).click()
    await a
      .getByRole('dialog', { name: 'End all other sessions?' })
      .getByRole('button', { name: 'End other sessions' })
      .click()
    await a.getByText('All other sessions were ended').waitFor()
    await c.getByRole('heading', { name: 'Sign in' }).waitFor({ timeout: 30_000 })
    expect(await a.evaluate(async () => (await fetch('/api/auth/me')).status)).toBe(200)
    for (const p of [a, b, c]) await p.context().close()
  })

  it('creates an expiring read-only token (its secret shown once), which a script uses until it is revoked', async () => {
    const account = await ui.createUser('operator', 'ivan')
    const page = await ui.open(account, '/account/tokens')
    await page.getByText('No API tokens').waitFor()
    await expectAccessible(page, 'tokens empty')
    await screenshot(page, 'account-tokens-empty')
    await page.getByRole('button', { name: 'New token' }).first().click()
    const dialog = page.getByRole('dialog', { name: 'New API token' })
    await dialog.getByLabel('Name').fill('nightly report')
    await dialog.getByLabel('Role').selectOption('viewer')
    await dialog.getByLabel('Expires after').selectOption('7')
    await dialog.getByLabel('Only these paths (optional)').fill('/api/auth/me\n/api/version')
    await expectAccessible(page, 'new token form')
    await screenshot(page, 'account-token-new')
    await dialog.getByRole('button', { name: 'Create token' }).click()
    const shown = page.getByRole('dialog', { name: 'Your new token' })
    const secret = await shown.getByLabel('Token').inputValue()
    expect(secret).toMatch(/^hostd_pat_/)
    await shown.getByRole('button', { name: 'Copy token' }).waitFor()
    await screenshot(page, 'account-token-created')

    // The script: reads what its paths and role allow, changes nothing.
    expect(await api('/api/auth/me', secret)).toMatchObject({ status: 200, body: { username: 'ivan', role: 'viewer' } })
    expect((await api('/api/users', secret)).status).toBe(403)
    expect(
      (await api('/api/me/password', secret, { currentPassword: PASSWORD, newPassword: 'another fine password' }))
        .status,
    ).toBe(403)

    await shown.getByRole('button', { name: 'Done' }).click()
    const table = page.getByRole('table', { name: 'Your API tokens' })
    await table.getByText('nightly report').waitFor()
    await table.getByText('in 7 days').waitFor()
    await expectAccessible(page, 'tokens')
    await screenshot(page, 'account-tokens')
    await table.getByRole('button', { name: 'Revoke token nightly report' }).click()
    await page
      .getByRole('dialog', { name: 'Revoke "nightly report"?' })
      .getByRole('button', { name: 'Revoke token' })
      .click()
    await page.getByText('No API tokens').waitFor()
    // The moment it is revoked, it stops working.
    expect((await api('/api/auth/me', secret)).status).toBe(401)
    await page.context().close()
  })

  it("an admin sees a user's two-factor, sessions and tokens, resets two-factor and ends their sessions", async () => {
    const judy = await ui.createUser('viewer', 'judy')
    await enrollByApi(judy) // signed in to enroll: that session is listed
    const page = await ui.open('admin', '/users')
    const row = page.getByRole('row', { name: /judy/ })
    await row.getByText('On').waitFor()
    await screenshot(page, 'users-two-factor-column')
    await row.getByRole('link', { name: 'judy' }).click()
    await page.getByRole('heading', { name: 'judy', level: 1 }).waitFor()
    expect(new URL(page.url()).pathname).toMatch(/^\/users\/[0-9a-f-]{36}$/)
    await expectAccessible(page, 'user detail')
    await screenshot(page, 'user-detail')

    await page.getByRole('button', { name: 'Reset two-factor' }).click()
    const confirmReset = page.getByRole('dialog', { name: 'Reset two-factor of judy?' })
    await confirmReset.getByRole('textbox').fill('judy')
    await confirmReset.getByRole('button', { name: 'Reset two-factor' }).click()
    await page.getByText('Two-factor of judy was reset').waitFor()
    // Signing in is one step again, and an admin can end what that opened.
    const judySession = await signInApi(judy)
    expect(judySession).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect((await api('/api/me/tokens', judySession, { name: 'judy script', role: 'viewer' })).status).toBe(201)
    await gotoRetrying(page, page.url())
    const sessions = page.getByRole('table', { name: 'Sessions of judy' })
    await expect.poll(() => sessions.getByRole('row').count()).toBeGreaterThan(1)
    await page.getByRole('table', { name: 'API tokens of judy' }).getByText('judy script').waitFor()
    await screenshot(page, 'user-detail-sessions-tokens')
    await page.getByRole('button', { name: 'Revoke token judy script' }).click()
    await page
      .getByRole('dialog', { name: 'Revoke "judy script"?' })
      .getByRole('button', { name: 'Revoke token' })
      .click()
    await page.getByText('"judy script" was revoked').waitFor()
    await page.getByRole('button', { name: 'End all sessions' }).click()
    await page
      .getByRole('dialog', { name: 'Sign judy out everywhere?' })
      .getByRole('button', { name: 'End all sessions' })
      .click()
    await page.getByText('Not signed in anywhere').waitFor()
    expect((await api('/api/auth/me', judySession)).status).toBe(401)
    await screenshot(page, 'user-detail-signed-out')

    // The policy: an admin without two-factor cannot require it (it would lock them out): said at the field.
    await gotoRetrying(page, `${ui.url}/users`)
    const policy = page.getByRole('form', { name: 'Two-factor policy' })
    await policy.getByLabel('Require two-factor sign-in for').selectOption('admins')
    await policy.getByRole('button', { name: 'Save policy' }).click()
    await expect
      .poll(() => policy.getByLabel('Require two-factor sign-in for').getAttribute('aria-invalid'))
      .toBe('true')
    await expectAccessible(page, 'users with policy')
    await screenshot(page, 'users-policy-lockout')
    await page.context().close()
  })

  it('the audit log shows repeated failed sign-ins as one entry with a count, and its retention can be shortened', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await ui.daemon.fetch('/api/auth/login', {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ username: 'nobody-here', password: 'not a password' }),
      })
      expect(res.status).toBe(401)
    }
    const page = await ui.open('admin', '/audit')
    const row = page.getByRole('row', { name: /nobody-here/ })
    await row.getByText('failure ×3').waitFor()
    expect(await page.getByRole('row', { name: /nobody-here/ }).count()).toBe(1)
    const retention = page.getByRole('form', { name: 'Audit retention' })
    expect(await retention.getByLabel('Keep records for (days)').inputValue()).toBe('365')
    await retention.getByLabel('Keep records for (days)').fill('90')
    await retention.getByRole('button', { name: 'Save retention' }).click()
    const ask = page.getByRole('dialog', { name: 'Shorten the audit log?' })
    await ask.getByText(/older than 90 days/).waitFor()
    await expectAccessible(page, 'audit retention confirm')
    await ask.getByRole('button', { name: 'Shorten the log' }).click()
    await page.getByText('Records are kept for 90 days, at most 100,000.').waitFor()
    expect((await api('/api/audit/retention', ui.adminToken)).body).toEqual({ maxAgeDays: 90, maxRows: 100_000 })
    await page.getByRole('row', { name: /audit\.retention/ }).waitFor()
    await expectAccessible(page, 'audit log')
    await screenshot(page, 'audit-log')
    await page.context().close()
  })

  it('a policy requiring two-factor sends a user without it to enrollment first, then on to the dashboard', async () => {
    // The admin turns two-factor on first (else the policy would lock them out), then requires it of everyone.
    const boss = await ui.createUser('admin', 'kim')
    const account = await ui.createUser('viewer', 'leo')
    const { session: bossToken } = await enrollByApi(boss)
    expect((await api('/api/auth/policy', bossToken, { requireTwoFactor: 'everyone' }, 'PUT')).status).toBe(200)
    try {
      const page = await ui.newPage()
      await gotoRetrying(page, `${ui.url}/audit`)
      await signInThroughForm(page, account)
      await page.getByRole('heading', { name: 'Set up two-factor sign-in' }).waitFor()
      expect(new URL(page.url()).pathname).toBe('/account/two-factor')
      await expectAccessible(page, 'enrollment required')
      await screenshot(page, 'enroll-required')
      await page.getByLabel('Your password').fill(PASSWORD)
      await page.getByRole('button', { name: 'Continue' }).click()
      const secret = (await page.getByLabel('Secret key').inputValue()).replace(/\s/g, '')
      await screenshot(page, 'enroll-required-scan')
      await page.getByLabel('Code from your app').fill(totp(secret))
      await page.getByRole('button', { name: 'Turn on two-factor' }).click()
      await page.getByRole('list', { name: 'Recovery codes' }).waitFor()
      await page.getByRole('button', { name: 'I have saved my recovery codes' }).click()
      // On to where the user was going (the audit log is admin-only: the page says so, inside the dashboard).
      await page.getByRole('heading', { name: 'Not available to you' }).waitFor()
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Overview' }).click()
      await page.getByRole('heading', { name: 'Overview' }).waitFor()
      await page.context().close()
    } finally {
      expect((await api('/api/auth/policy', bossToken, { requireTwoFactor: 'nobody' }, 'PUT')).status).toBe(200)
    }
  })
})
