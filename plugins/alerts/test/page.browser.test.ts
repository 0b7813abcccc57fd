/**
 * The alerts page, its overview card and the header count in Debian's Chromium against the real daemon, with the
 * real containers plugin on a private Docker engine: a container with a restart policy stopped outside hostd fires
 * the default rule. A viewer sees it (page, card, header) and nothing to change; an operator silences it and reads
 * a channel's delivery failure; an admin adds a rule and sends a test. Screenshots light and dark.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, freePort } from '@hostd/sdk/testing'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../../../test/support/browser.ts'
import { importTestImage, startEngine, type TestEngine } from '../../containers/test/support/engine.ts'

const IMAGE = 'hostd-test/alerts-page:1'

describe('alerts pages', { timeout: 300_000 }, () => {
  let engine: TestEngine
  let ui: UiHarness
  let closedPort: number

  const adminApi = async (method: string, path: string, body?: unknown) => {
    const res = await ui.daemon.fetch(path, {
      method,
      headers: {
        authorization: `Bearer ${ui.adminToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, json: text ? JSON.parse(text) : undefined }
  }

  beforeAll(async () => {
    engine = await startEngine()
    await importTestImage(engine, IMAGE)
    ui = await startUi({
      builtinPlugins: true,
      env: { DOCKER_HOST: engine.host, HOSTD_BUILTIN_PLUGINS: 'alerts,containers' },
    })
    // A channel nothing listens behind: its failure is shown with the reason.
    closedPort = await freePort()
    const channel = await adminApi('POST', '/api/alerts/channels', {
      name: 'Team hook',
      type: 'webhook',
      options: { url: `http://127.0.0.1:${closedPort}/hook` },
    })
    expect(channel.status).toBe(201)
    await engine.docker('run', '-d', '--restart', 'always', '--name', 'web', IMAGE, 'sleep', '3600')
    await engine.docker('stop', '-t', '0', 'web')
    await eventually(async () => (await adminApi('GET', '/api/alerts')).json.firing === 1, 200)
  }, 180_000)
  afterAll(async () => {
    await ui?.close()
    await engine?.stop()
  })

  it('shows a viewer the firing alert on the page, the card and the header, with nothing to change', async () => {
    const page = await ui.open('viewer', '/')
    const header = page.getByRole('banner')
    await header.getByRole('link', { name: '1 alert firing' }).waitFor()
    const card = page.getByRole('region', { name: 'Alerts' })
    await card.getByText('alert firing').waitFor()
    await card.getByText(/Container web \(restart policy always\) is exited/).waitFor()
    await screenshot(page, 'alerts-overview-viewer')
    await header.getByRole('link', { name: '1 alert firing' }).click()
    await page.getByRole('heading', { name: 'Alerts', level: 1 }).waitFor()
    const row = page.getByRole('row', { name: /Container web/ })
    await row.getByText('Firing').waitFor()
    expect(await page.getByRole('button', { name: /^Silence/ }).count()).toBe(0)
    expect(await page.getByRole('tab', { name: 'Channels' }).count()).toBe(0)
    await expectAccessible(page, 'alerts page, viewer')
    await screenshot(page, 'alerts-firing-viewer')
    await page.getByRole('tab', { name: 'Silences' }).click()
    await page.getByText('No silences').waitFor()
    await page.getByRole('tab', { name: 'Rules' }).click()
    await page.getByRole('row', { name: /Container with a restart policy is down/ }).waitFor()
    expect(await page.getByRole('button', { name: 'Add rule' }).count()).toBe(0)
  })

  it('lets an operator silence the alert and read why a channel failed', async () => {
    const page = await ui.open('operator', '/alerts')
    await page.getByRole('button', { name: /^Silence Container web/ }).click()
    const dialog = page.getByRole('dialog', { name: 'Silence: Container with a restart policy is down' })
    await dialog.getByRole('combobox', { name: 'For' }).selectOption('1')
    await dialog.getByRole('textbox', { name: 'Comment' }).fill('restarting the host tonight')
    await screenshot(page, 'alerts-silence-dialog')
    await dialog.getByRole('button', { name: 'Silence' }).click()
    await page
      .getByRole('row', { name: /Container web/ })
      .getByText('silenced')
      .waitFor()
    // The header count leaves with the silence at once: the page tells the shell to read the badges again. (The
    // shell also reads them every 30 s; the bound, half of that, tells the two apart and is not a speed goal.)
    await page
      .getByRole('banner')
      .getByRole('link', { name: /alert firing/ })
      .waitFor({ state: 'detached', timeout: 15_000 })
    await page.getByRole('tab', { name: 'Silences' }).click()
    await page
      .getByRole('row', { name: /target web/ })
      .getByText('restarting the host tonight')
      .waitFor()
    await page.getByRole('tab', { name: 'Channels' }).click()
    const failure = page.getByRole('alert').filter({ hasText: 'Last delivery failed' })
    await failure.getByText(`Nothing accepts connections at 127.0.0.1:${closedPort} (connection refused).`).waitFor()
    await page
      .getByRole('row', { name: /Container web/ })
      .first()
      .waitFor()
    expect(await page.getByRole('button', { name: 'Send a test through Team hook' }).count()).toBe(0)
    await expectAccessible(page, 'alerts channels, operator')
    await screenshot(page, 'alerts-channels-operator')
    await page.goto(`${ui.url}/`)
    await page.getByRole('region', { name: 'Alerts' }).getByText('0').waitFor()
    expect(
      await page
        .getByRole('banner')
        .getByRole('link', { name: /alert firing/ })
        .count(),
    ).toBe(0)
  })

  it('lets an admin add a rule and send a test, with the delivery error in words', async () => {
    const page = await ui.open('admin', '/alerts')
    await page.getByRole('tab', { name: 'Rules' }).click()
    await page.getByRole('button', { name: 'Add rule' }).click()
    const dialog = page.getByRole('dialog', { name: 'New rule' })
    await dialog.getByRole('textbox', { name: 'Name' }).fill('Root nearly full')
    await dialog.getByRole('combobox', { name: 'Metric' }).selectOption('filesystem.usedPercent')
    await dialog.getByRole('textbox', { name: 'Only these targets' }).fill('/')
    await dialog.getByRole('spinbutton', { name: 'Fires above' }).fill('95')
    await dialog.getByRole('spinbutton', { name: 'Clears below' }).fill('90')
    await screenshot(page, 'alerts-rule-dialog')
    await dialog.getByRole('button', { name: 'Add rule' }).click()
    await page
      .getByRole('row', { name: /Root nearly full/ })
      .getByText('File system used (%) above 95, clears below 90')
      .waitFor()
    await page.getByRole('tab', { name: 'Channels' }).click()
    await page.getByRole('button', { name: 'Send a test through Team hook' }).click()
    await page
      .getByText(`Team hook: Nothing accepts connections at 127.0.0.1:${closedPort} (connection refused)`)
      .waitFor()
    await expectAccessible(page, 'alerts channels, admin')
    await screenshot(page, 'alerts-channels-admin')
  })

  it('lists the rules about hostd and the host, and lets an admin add a sign-in burst rule', async () => {
    const page = await ui.open('admin', '/alerts')
    await page.getByRole('tab', { name: 'Rules' }).click()
    for (const [name, what] of [
      ['A plugin failed', 'A plugin failed to load or start'],
      ['Many failed sign-ins', '10 failed sign-ins within 5 min'],
      ['New admin account', 'A new admin account'],
      ['Two-factor sign-in turned off', 'Two-factor sign-in turned off'],
      ['hostd restarted without a clean stop', 'hostd started again without a clean stop'],
      ['Package updates waiting', 'Package updates waiting'],
      ['The host needs a reboot', 'A reboot required'],
    ]) {
      const row = page.getByRole('row', { name: new RegExp(`^${name} `) })
      await row.waitFor()
      expect(await row.locator('td, th').nth(1).textContent()).toBe(what)
    }
    await page.getByRole('button', { name: 'Add rule' }).click()
    const dialog = page.getByRole('dialog', { name: 'New rule' })
    await dialog.getByRole('textbox', { name: 'Name' }).fill('Sign-in storm')
    await dialog.getByRole('combobox', { name: 'Watches' }).selectOption('account')
    await dialog.getByRole('combobox', { name: 'Condition' }).selectOption('failedSignIns')
    await dialog.getByRole('spinbutton', { name: 'Fires at (failures)' }).fill('5')
    await dialog.getByRole('spinbutton', { name: 'Within (minutes)' }).fill('2')
    await dialog.getByRole('combobox', { name: 'Severity' }).selectOption('critical')
    await expectAccessible(page, 'alerts account rule dialog, admin')
    await screenshot(page, 'alerts-rule-dialog-account')
    await dialog.getByRole('button', { name: 'Add rule' }).click()
    await page
      .getByRole('row', { name: /Sign-in storm/ })
      .getByText('5 failed sign-ins within 2 min')
      .waitFor()
    await screenshot(page, 'alerts-rules-admin')
  })
})
