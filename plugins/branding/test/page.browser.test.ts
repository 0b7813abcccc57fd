/**
 * Branding settings in Debian's Chromium against the real daemon: an admin sets the server name, a headline, a
 * description holding HTML (which must show as typed, never as markup) and a background image (bad files refused,
 * by the page for type and size, by the server for bytes that are no image); after signing out, the sign-in page
 * shows all four. Other roles have no branding page.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  expectAccessible,
  screenshot,
  signInThroughForm,
  startUi,
  type UiHarness,
} from '../../../test/support/browser.ts'
import { GIF, gradientPng } from './images.ts'

const NAME = 'Family NAS'
const HEADLINE = 'The Okafor household server'
const DESCRIPTION = 'Ask Sam for an account.\nBackups run at <b>2am</b> & finish by 3.'

describe('branding page', { timeout: 240_000 }, () => {
  let ui: UiHarness
  beforeAll(async () => {
    ui = await startUi({ builtinPlugins: true })
  }, 120_000)
  afterAll(() => ui?.close())

  it('is for admins only', async () => {
    const page = await ui.open('operator', '/')
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Overview' }).waitFor()
    expect(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Branding' }).count()).toBe(0)
  })

  it('lets an admin set the text and background, and the sign-in page shows them', async () => {
    const page = await ui.open('admin', '/')
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Branding' }).click()
    await page.getByRole('heading', { name: 'Branding', level: 1 }).waitFor()
    const text = page.getByRole('form', { name: 'Sign-in page text' })
    await text.getByRole('textbox', { name: 'Server name' }).fill(NAME)
    await text.getByRole('textbox', { name: 'Headline' }).fill(HEADLINE)
    await text.getByRole('textbox', { name: 'Description' }).fill(DESCRIPTION)
    // Counters match the caps; the preview follows the typing, as text.
    await page.getByText(`${[...HEADLINE].length} / 120 characters`).waitFor()
    await page.getByText(`${[...DESCRIPTION].length} / 1000 characters`, { exact: false }).waitFor()
    const preview = page.getByRole('figure', { name: 'What the sign-in page shows before anyone signs in.' })
    await preview.getByText(HEADLINE).waitFor()
    await preview.getByText('Backups run at <b>2am</b> & finish by 3.', { exact: false }).waitFor()
    await text.getByRole('button', { name: 'Save text' }).click()
    // The shell's header follows at once.
    await page.getByRole('banner').getByRole('link', { name: NAME }).waitFor()

    // Refused by the page: not an image type, and too large.
    const picker = page.getByLabel('Background image', { exact: true })
    await picker.setInputFiles({ name: 'anim.gif', mimeType: 'image/gif', buffer: GIF })
    await page.getByRole('alert').filter({ hasText: 'anim.gif is not a PNG, JPEG or WebP image.' }).waitFor()
    await picker.setInputFiles({ name: 'huge.png', mimeType: 'image/png', buffer: Buffer.alloc(5 * 1024 * 1024) })
    await page.getByRole('alert').filter({ hasText: 'at most 4 MiB' }).waitFor()
    // Refused by the server: named and typed as a PNG, but its bytes are a GIF (415).
    await picker.setInputFiles({ name: 'fake.png', mimeType: 'image/png', buffer: GIF })
    await page.getByRole('alert').filter({ hasText: 'read from its bytes' }).waitFor()
    await screenshot(page, 'branding-upload-refused')

    await picker.setInputFiles({ name: 'hills.png', mimeType: 'image/png', buffer: gradientPng(1280, 800) })
    await page.getByRole('img', { name: 'The current background' }).waitFor()
    expect(await page.getByRole('alert').count()).toBe(0)
    await expectAccessible(page, 'branding settings')
    await screenshot(page, 'branding-settings')

    // Signed out: the sign-in page shows the name, headline, description (as text) and background.
    await page.getByRole('button', { name: /account menu/ }).click()
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByRole('heading', { name: 'Sign in' }).waitFor()
    const main = page.getByRole('main')
    await main.getByText(NAME, { exact: true }).waitFor()
    await main.getByText(HEADLINE, { exact: true }).waitFor()
    const shown = await main.getByText('Ask Sam for an account.', { exact: false }).innerText()
    expect(shown).toBe(DESCRIPTION) // line break kept, HTML as typed
    expect(await page.title()).toContain(NAME)
    // The background is the image just uploaded, served publicly (this context has no session now).
    const background = await main.evaluate((el) => getComputedStyle(el.parentElement!).backgroundImage)
    const url = /url\("([^"]+)"\)/.exec(background)?.[1]
    expect(url).toMatch(/\/api\/branding\/background\?v=[0-9a-f]{16}$/)
    const image = await page.request.get(url!)
    expect(image.status()).toBe(200)
    expect(image.headers()['content-type']).toBe('image/png')
    await expectAccessible(page, 'sign-in with branding')
    await screenshot(page, 'branding-sign-in')

    // Back in: remove the background, and the sign-in page goes back to its plain one.
    await signInThroughForm(page, ui.admin)
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Branding' }).click()
    await page.getByRole('button', { name: 'Remove background' }).click()
    await page
      .getByRole('dialog', { name: 'Remove the background?' })
      .getByRole('button', { name: 'Remove background' })
      .click()
    await page.getByText('No background: the sign-in page uses its plain one.').waitFor()
    const plain = await ui.newPage()
    await plain.goto(ui.url)
    await plain.getByRole('heading', { name: 'Sign in' }).waitFor()
    await plain.getByText(NAME, { exact: true }).waitFor()
    expect(
      await plain.getByRole('main').evaluate((el) => getComputedStyle(el.parentElement!).backgroundImage),
    ).not.toContain('/api/branding/background')
    ui.assertNoCspViolations()
  })
})
