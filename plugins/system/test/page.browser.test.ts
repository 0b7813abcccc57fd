/**
 * The system page in Debian's Chromium against a real daemon and the real root helper in dry-run mode (power and
 * privileged actions would restart or rename this machine), with a STAND-IN release feed (the release site does
 * not exist here; support/release-feed.ts): what a viewer sees, power behind a typed confirmation, a privileged
 * action with the server's refusal at the field, installing an update with its outcome, and the notice while the
 * helper is stopped.
 */
import { generateKeyPairSync } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, readlink, rm } from 'node:fs/promises'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../../../test/support/browser.ts'
import { startHelper, type RunningHelper } from '../../../helper/test/start-helper.ts'
import { releaseArchive, signedFeed, startReleaseFeed, type ReleaseFeed } from './support/release-feed.ts'

describe('system page', { timeout: 180_000 }, () => {
  let dir: string
  let feed: ReleaseFeed
  let helper: RunningHelper
  let ui: UiHarness
  const host = hostname()

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hostd-system-ui-'))
    const key = generateKeyPairSync('ed25519')
    feed = await startReleaseFeed()
    feed.state.archive = await releaseArchive(dir, '99.0.0')
    feed.state.feed = signedFeed('99.0.0', feed.state.archive, key.privateKey)
    helper = await startHelper({ dryRun: true })
    ui = await startUi({
      builtinPlugins: true,
      env: {
        HOSTD_HELPER_SOCKET: helper.socket,
        HOSTD_UPDATE_FEED_URL: feed.url,
        HOSTD_UPDATE_INSTALL_DIR: join(dir, 'app'),
        HOSTD_UPDATE_FIRST_CHECK_SECONDS: '1',
        HOSTD_UPDATE_PUBLIC_KEY: key.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      },
    })
  }, 120_000)
  afterAll(async () => {
    await ui?.close()
    await helper?.stop()
    await feed?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('a viewer sees the helper, the privileged settings, power and updates, and no control', async () => {
    const page = await ui.open('viewer', '/system')
    await page.getByRole('heading', { name: 'System', level: 1 }).waitFor()
    await page.getByText('Root helper running').waitFor()
    await page.getByText('Dry run: nothing is changed').waitFor()
    const actions = page.getByRole('table', { name: 'Privileged actions' })
    await actions.getByText(host, { exact: true }).waitFor() // the host name's current value
    await page.getByText('Only admins can put the server to sleep, restart it or shut it down.').waitFor()
    const facts = page.getByRole('region', { name: 'This server' })
    await facts.getByText(host, { exact: true }).waitFor()
    await facts.getByText(/available\)$/).waitFor() // memory: total and available
    const main = page.getByRole('main')
    expect(
      await main.getByRole('button', { name: /Restart|Shut down|Sleep|Turn on|Turn off|Change|Install/ }).count(),
    ).toBe(0)
    // Network time and SSH once (in Admin Privileges), not again under Other settings.
    expect(await page.getByText('Network time (NTP)').count()).toBe(1)
    expect(await page.getByText('Network time', { exact: true }).count()).toBe(0)
    // The commit and plugin API version live here, not on the overview.
    await page.getByRole('region', { name: 'Updates' }).getByText('Plugin API').waitFor()
    await expectAccessible(page, 'system (viewer)')
    await screenshot(page, 'system-viewer')

    // The overview's cards: updates waiting and a restart said plainly; memory used of total.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Overview' }).click()
    const updates = page.getByRole('region', { name: 'Updates' })
    await updates.getByText('System updates').waitFor({ timeout: 30_000 })
    await updates.getByText(existsSync('/run/reboot-required') ? 'Restart required' : 'Not needed').waitFor()
    expect(await updates.getByText(/Plugin API|Commit/).count()).toBe(0)
    const memory = page.getByRole('region', { name: 'Memory' })
    await memory
      .getByText(/^[\d.]+ [KMG]iB of [\d.]+ [KMG]iB \(\d+ %\)$/)
      .first()
      .waitFor()
    await memory.getByRole('progressbar', { name: 'RAM' }).waitFor()
    await page.getByRole('list', { name: 'CPU usage: key' }).getByText('iowait').waitFor()
    await page
      .getByRole('list', { name: 'Memory used: key' })
      .getByText(/^of [\d.]+ [KMG]iB in all$/)
      .waitFor()
    await expectAccessible(page, 'overview cards')
    await screenshot(page, 'system-overview-cards')
  })

  it('power: the typed confirmation must match the server name before the button works; the helper runs it dry', async () => {
    const page = await ui.open('admin', '/system')
    await page.getByRole('button', { name: 'Restart', exact: true }).click()
    const dialog = page.getByRole('dialog', { name: `Restart: ${host}?` })
    const confirm = dialog.getByRole('button', { name: 'Restart', exact: true })
    expect(await confirm.isDisabled()).toBe(true)
    await dialog.getByRole('textbox', { name: `Type ${host} to confirm` }).fill(`${host}x`)
    expect(await confirm.isDisabled()).toBe(true)
    await expectAccessible(page, 'restart confirmation')
    await screenshot(page, 'system-restart-confirm')
    await dialog.getByRole('textbox', { name: `Type ${host} to confirm` }).fill(host)
    expect(await confirm.isDisabled()).toBe(false)
    const before = (await helper.log()).length
    await confirm.click()
    await page.getByText('Dry run: nothing was changed; the root helper would run "systemctl reboot"').waitFor()
    expect((await helper.log()).slice(before).map((e) => [e.action, e.outcome])).toEqual([['power.restart', 'dry-run']])

    // Cancelling runs nothing.
    await page.getByRole('button', { name: 'Shut down', exact: true }).click()
    await page
      .getByRole('dialog', { name: `Shut down: ${host}?` })
      .getByRole('button', { name: 'Cancel' })
      .click()
    await new Promise((r) => setTimeout(r, 500))
    expect((await helper.log()).some((e) => e.action === 'power.shutdown')).toBe(false)
  })

  it("a privileged setting: the server's refusal shows at the field; a good value runs in the helper's dry run", async () => {
    const page = await ui.open('admin', '/system')
    await page.getByRole('button', { name: 'Change Host name' }).click()
    const dialog = page.getByRole('dialog', { name: 'Change the host name' })
    await dialog.getByRole('textbox', { name: 'Host name' }).fill('bad_name!')
    await dialog.getByRole('button', { name: 'Apply' }).click()
    await dialog.getByText(/hostname: value must be a host name/).waitFor()
    expect(await dialog.getByRole('textbox', { name: 'Host name' }).getAttribute('aria-invalid')).toBe('true')
    await expectAccessible(page, 'privileged dialog with an error')
    await screenshot(page, 'system-privileged-error')
    await dialog.getByRole('textbox', { name: 'Host name' }).fill('media-server')
    await dialog.getByRole('button', { name: 'Apply' }).click()
    await dialog.waitFor({ state: 'detached' })
    await page
      .getByText('Dry run: nothing was changed; the root helper would run "hostnamectl set-hostname media-server"')
      .waitFor()
    expect((await helper.log()).findLast((e) => e.action === 'hostname.set')).toMatchObject({
      outcome: 'dry-run',
      args: { name: 'media-server' },
    })

    // The time zone is picked from the zones the system knows: a search narrows the list, no free text.
    await page.getByRole('button', { name: 'Change Time zone' }).click()
    const zone = page.getByRole('dialog', { name: 'Change the time zone' })
    await zone.getByRole('searchbox', { name: 'Search time zones' }).fill('new york')
    const select = zone.getByRole('combobox', { name: 'Time zone' })
    await expect.poll(() => select.inputValue()).toBe('America/New_York')
    await zone.getByText('1 zone', { exact: true }).waitFor()
    await expectAccessible(page, 'time zone dialog')
    await screenshot(page, 'system-timezone')
    await zone.getByRole('searchbox', { name: 'Search time zones' }).fill('paris')
    await expect.poll(() => select.inputValue()).toBe('Europe/Paris')
    await zone.getByRole('button', { name: 'Apply' }).click()
    await zone.waitFor({ state: 'detached' })
    await page
      .getByText('Dry run: nothing was changed; the root helper would run "timedatectl set-timezone Europe/Paris"')
      .waitFor()
  })

  it('updates: the last check shows the new release; an admin installs it and sees where it went (restart in dry run)', async () => {
    const page = await ui.open('admin', '/system')
    const updates = page.getByRole('region', { name: 'Updates' })
    // The daemon's first check runs a second after its start; reload until it has.
    await expect
      .poll(
        async () => {
          if (await updates.getByText('Update available: 99.0.0').count()) return true
          await page.reload()
          await updates.getByText('Installed').waitFor()
          return false
        },
        { timeout: 60_000, interval: 2000 },
      )
      .toBe(true)
    await updates.getByText('Release 99.0.0: faster and safer.').waitFor()
    await expectAccessible(page, 'system with an update')
    await screenshot(page, 'system-update-available')
    feed.state.archiveDelayMs = 4000 // a slow download: the progress stays on screen
    await updates.getByRole('button', { name: 'Install 99.0.0' }).click()
    await page
      .getByRole('dialog', { name: 'Install hostd 99.0.0?' })
      .getByRole('button', { name: 'Install and restart' })
      .click()
    await updates.getByRole('progressbar', { name: 'Installing hostd 99.0.0' }).waitFor()
    expect(await updates.getByRole('button', { name: 'Install 99.0.0' }).count()).toBe(0) // no second install meanwhile
    await screenshot(page, 'system-update-installing')
    await updates
      .getByText(
        new RegExp(
          String.raw`hostd 99\.0\.0 is installed in .*releases/99\.0\.0\. The root helper is in dry run, ` +
            String.raw`so hostd did not restart \(it would have run "systemctl restart hostd\.service"\)`,
        ),
      )
      .waitFor({ timeout: 60_000 })
    await updates.getByText('Restarting').waitFor()
    expect(await readlink(join(dir, 'app', 'current'))).toBe(join('releases', '99.0.0'))
    expect(await readFile(join(dir, 'app', 'current', 'VERSION'), 'utf8')).toBe('99.0.0')
    await screenshot(page, 'system-update-installed')
  })

  it('without the helper: the notice says so and the controls are off', async () => {
    await helper.stop(true)
    const page = await ui.open('admin', '/system')
    await page.getByText('Admin Privileges are not available: the root helper is not running').waitFor()
    expect(await page.getByRole('button', { name: 'Restart', exact: true }).isDisabled()).toBe(true)
    expect(await page.getByRole('button', { name: 'Change Host name' }).isDisabled()).toBe(true)
    await expectAccessible(page, 'system without the helper')
    await screenshot(page, 'system-no-helper')
    await page.setViewportSize({ width: 390, height: 844 }) // a phone: the cards stack, the tables become cards
    await page.getByRole('heading', { name: 'Power' }).waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth)).toBe(true)
    await expectAccessible(page, 'system at phone width')
    await screenshot(page, 'system-phone')
    await page.setViewportSize({ width: 1280, height: 860 })
    helper = await startHelper({ dryRun: true, dir: helper.dir })
    await page.getByRole('button', { name: 'Check again' }).click()
    await page.getByText('Root helper running').waitFor()
    expect(await page.getByRole('button', { name: 'Restart', exact: true }).isDisabled()).toBe(false)
    ui.assertNoCspViolations()
  })
})
