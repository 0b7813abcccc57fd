/**
 * The widgets card on the overview in Debian's Chromium against the real daemon, whose scripts run as the
 * unprivileged test account (test/support/unix-user.ts). An admin adds a disk-usage widget through the card and
 * its real output appears; the other types and the failure states are drawn; an admin edits and deletes in place;
 * a viewer sees outputs but no script and no controls; an operator runs a widget now. A second daemon without
 * HOSTD_WIDGETS_USER shows what to set.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../../../test/support/browser.ts'
import { ensureTestAccount } from '../../../test/support/unix-user.ts'

const DISK_SCRIPT = 'df -h / | tail -1'

async function adminApi(ui: UiHarness, path: string, body?: unknown): Promise<any> {
  const res = await ui.daemon.fetch(path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${ui.adminToken}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`)
  return res.status === 204 ? undefined : res.json()
}

describe('widgets on the overview', { timeout: 300_000 }, () => {
  let ui: UiHarness
  let workDir: string

  beforeAll(async () => {
    const account = await ensureTestAccount()
    workDir = await mkdtemp(join(tmpdir(), 'hostd-widgets-page-'))
    ui = await startUi({
      builtinPlugins: true,
      env: { HOSTD_WIDGETS_USER: account.name, HOSTD_WIDGETS_WORK_DIR: workDir },
    })
  }, 120_000)
  afterAll(async () => {
    await ui?.close()
    if (workDir) await rm(workDir, { recursive: true, force: true })
  })

  it('lets an admin add a disk-usage widget in place and shows its output', async () => {
    const page = await ui.open('admin', '/')
    const card = page.getByRole('region', { name: 'Widgets' })
    await card.getByText('No widgets yet').waitFor()
    await expectAccessible(page, 'overview without widgets')
    await card.getByRole('button', { name: 'Add widget' }).click()
    const dialog = page.getByRole('dialog', { name: 'Add a widget' })
    await dialog.getByRole('textbox', { name: 'Title' }).fill('Disk usage')
    await dialog.getByRole('textbox', { name: 'Script' }).fill(DISK_SCRIPT)
    await dialog.getByRole('spinbutton', { name: 'Runs every (seconds)' }).fill('5') // below the minimum: the browser says so
    await dialog.getByRole('button', { name: 'Add widget' }).click()
    await expect
      .poll(() => dialog.getByRole('spinbutton', { name: 'Runs every (seconds)' }).getAttribute('aria-invalid'))
      .toBe('true')
    await expectAccessible(page, 'widget editor')
    await screenshot(page, 'widgets-editor')
    await dialog.getByRole('spinbutton', { name: 'Runs every (seconds)' }).fill('60')
    await dialog.getByRole('button', { name: 'Add widget' }).click()

    // Its real output, run as the test account: the root file system's line of df.
    const output = card
      .getByRole('listitem')
      .filter({ has: page.getByRole('heading', { name: 'Disk usage' }) })
      .getByLabel('Output of Disk usage')
    await expect.poll(() => output.textContent().catch(() => ''), { timeout: 60_000 }).toMatch(/\d+%\s+\/$/)
    await card.getByText('Script').first().click()
    await card.getByText(DISK_SCRIPT).waitFor()

    // The other types and the ways a run can end, made through the API.
    await adminApi(ui, '/api/bento/widgets', {
      title: 'Root used',
      type: 'stat',
      script: "df --output=pcent / | tail -1 | tr -d ' '; echo 'of / in use'",
      refreshSeconds: 600,
    })
    await adminApi(ui, '/api/bento/widgets', {
      title: 'Root fill',
      type: 'progress',
      script: "df --output=pcent / | tail -1 | tr -d ' %'; echo 'Root file system'",
      refreshSeconds: 600,
    })
    await adminApi(ui, '/api/bento/widgets', {
      title: 'Services',
      type: 'list',
      script: "printf 'web\\trunning\\nbackup\\tidle\\ndns\\trunning\\n'",
      refreshSeconds: 600,
    })
    await adminApi(ui, '/api/bento/widgets', {
      title: 'Broken check',
      type: 'text',
      script: 'echo checking; echo "no such service" >&2; exit 3',
      refreshSeconds: 600,
    })
    await adminApi(ui, '/api/bento/widgets', {
      title: 'Slow check',
      type: 'text',
      script: 'sleep 30',
      refreshSeconds: 600,
      timeoutSeconds: 1,
    })
    await card.getByText('of / in use', { exact: true }).waitFor({ timeout: 60_000 })
    await card.getByRole('progressbar', { name: 'Root file system' }).waitFor({ timeout: 60_000 })
    expect(
      Number(await card.getByRole('progressbar', { name: 'Root file system' }).getAttribute('aria-valuenow')),
    ).toBeGreaterThan(0)
    await card.getByText('backup', { exact: true }).waitFor()
    await card.getByText('Exit code 3').waitFor({ timeout: 60_000 })
    await card.getByText('Timed out').waitFor({ timeout: 60_000 })
    await expectAccessible(page, 'overview with widgets')
    await screenshot(page, 'widgets-overview-admin')

    // Edit in place.
    await card.getByRole('button', { name: 'Edit Disk usage' }).click()
    const edit = page.getByRole('dialog', { name: 'Edit Disk usage' })
    expect(await edit.getByRole('textbox', { name: 'Script' }).inputValue()).toBe(DISK_SCRIPT)
    await edit.getByRole('textbox', { name: 'Title' }).fill('Root disk')
    await edit.getByRole('button', { name: 'Save widget' }).click()
    await card.getByRole('heading', { name: 'Root disk' }).waitFor()

    // Delete in place, after a confirmation.
    await card.getByRole('button', { name: 'Delete Slow check' }).click()
    await page
      .getByRole('dialog', { name: 'Delete Slow check?' })
      .getByRole('button', { name: 'Delete widget' })
      .click()
    await expect.poll(() => card.getByRole('heading', { name: 'Slow check' }).count()).toBe(0)
    ui.assertNoCspViolations()
  })

  it('shows a viewer the outputs, never a script or a control', async () => {
    const page = await ui.open('viewer', '/')
    const card = page.getByRole('region', { name: 'Widgets' })
    const output = card.getByLabel('Output of Root disk')
    await expect.poll(() => output.textContent().catch(() => ''), { timeout: 30_000 }).toMatch(/\d+%\s+\/$/)
    await card.getByText('of / in use', { exact: true }).waitFor()
    expect(await card.getByText('Script', { exact: true }).count()).toBe(0)
    expect(await page.content()).not.toContain('df -h')
    expect(await page.content()).not.toContain('tr -d')
    expect(await card.getByRole('button').count()).toBe(0)
    await expectAccessible(page, 'overview as viewer')
    await screenshot(page, 'widgets-overview-viewer')
    ui.assertNoCspViolations()
  })

  it('lets an operator run a widget now', async () => {
    const operator = await ui.createUser('operator')
    const page = await ui.open(operator, '/')
    const card = page.getByRole('region', { name: 'Widgets' })
    await card.getByLabel('Output of Root disk').waitFor()
    expect(await card.getByRole('button', { name: /^(Edit|Delete) / }).count()).toBe(0)
    expect(await card.getByRole('button', { name: 'Add widget' }).count()).toBe(0)
    await card.getByRole('button', { name: 'Run Root disk now' }).click()
    await expect
      .poll(
        async () => {
          const audit = await adminApi(ui, '/api/audit?range=all&limit=200')
          return audit.items.some(
            (e: { action: string; username: string | null; detail: { trigger?: string } }) =>
              e.action === 'widget.run' && e.username === operator.username && e.detail?.trigger === 'manual',
          )
        },
        { timeout: 30_000 },
      )
      .toBe(true)
    await expect.poll(() => card.getByRole('button', { name: 'Run Root disk now' }).isEnabled()).toBe(true)
    await expectAccessible(page, 'overview as operator')
    await screenshot(page, 'widgets-overview-operator')
    ui.assertNoCspViolations()
  })
})

describe('widgets without a script account', { timeout: 180_000 }, () => {
  let ui: UiHarness
  beforeAll(async () => {
    ui = await startUi({ builtinPlugins: true })
  }, 120_000)
  afterAll(() => ui?.close())

  it('tells an admin what to set, and cannot run', async () => {
    await adminApi(ui, '/api/bento/widgets', { title: 'Uptime', type: 'text', script: 'uptime' })
    const page = await ui.open('admin', '/')
    const card = page.getByRole('region', { name: 'Widgets' })
    await card.getByText('Widget scripts are not running.').waitFor()
    await card.getByText(/set HOSTD_WIDGETS_USER/).waitFor()
    await card.getByText('HOSTD_WIDGETS_USER=hostd-widgets').waitFor()
    expect(await card.getByRole('button', { name: 'Run Uptime now' }).isDisabled()).toBe(true)
    await card.getByText('Not run yet: scripts cannot run on this server.').waitFor()
    await expectAccessible(page, 'widgets without a runner')
    await screenshot(page, 'widgets-no-runner')
    ui.assertNoCspViolations()
  })
})
