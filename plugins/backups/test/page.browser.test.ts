/**
 * The backups page in Debian's Chromium against the real daemon (only this plugin loaded) and the real restic: an
 * admin adds a local repository through the page and gets the recovery kit once; a job made through the API runs
 * from the page ("Run now") and shows its result; a snapshot is browsed and a file restored under the file root.
 * An operator has no Backups entry. Screenshots light and dark in .hostd-test/screenshots/backups-*.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../../../test/support/browser.ts'

describe('the backups page', { timeout: 300_000 }, () => {
  let ui: UiHarness
  let work: string

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'hostd-backups-page-'))
    await mkdir(join(work, 'docs'))
    await writeFile(join(work, 'docs', 'notes.txt'), 'notes to keep\n')
    ui = await startUi({
      builtinPlugins: true,
      env: { HOSTD_BUILTIN_PLUGINS: 'backups', HOSTD_FILE_ROOTS: `files=${join(work, 'root')}` },
    })
  }, 120_000)
  afterAll(async () => {
    await ui?.close()
    if (work) await rm(work, { recursive: true, force: true })
  })

  async function api(path: string, body?: unknown): Promise<any> {
    const res = await ui.daemon.fetch(path, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${ui.adminToken}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`)
    return res.json()
  }

  it('adds a repository, runs a job, browses a snapshot and restores a file', async () => {
    const page = await ui.open('admin', '/backups')
    await page.getByRole('heading', { name: 'Backups', level: 1 }).waitFor()
    // Empty states first.
    await page.getByText('No backup jobs yet').waitFor()
    await expectAccessible(page, 'backups without jobs')
    await screenshot(page, 'backups-empty')

    await page.getByRole('tab', { name: 'Repositories' }).click()
    await page.getByText('No repositories yet').waitFor()
    await page.getByRole('button', { name: 'Add repository' }).click()
    const dialog = page.getByRole('dialog', { name: 'Add a repository' })
    await dialog.getByRole('textbox', { name: 'Name' }).fill('usb disk')
    // S3's fields (the kind is tested against a server in s3.test.ts), then back to a folder.
    await dialog.getByLabel('Kind').selectOption('s3')
    for (const field of ['Endpoint', 'Bucket', 'Folder in the bucket', 'Access key ID', 'Secret access key', 'Region'])
      await dialog.getByLabel(field, { exact: true }).waitFor()
    await screenshot(page, 'backups-add-s3')
    await dialog.getByLabel('Kind').selectOption('local')
    await dialog.getByRole('textbox', { name: 'Folder' }).fill(join(work, 'repo'))
    await expectAccessible(page, 'add a repository')
    await screenshot(page, 'backups-add-repository')
    await dialog.getByRole('button', { name: 'Add repository' }).click()
    const kit = page.getByRole('dialog', { name: 'Recovery kit' })
    await kit.getByText('It is shown this once', { exact: false }).waitFor()
    expect(await kit.getByRole('link', { name: 'Download the recovery kit' }).count()).toBe(1)
    const password = await kit.locator('dd code').nth(1).textContent()
    expect(password).toMatch(/^[A-Za-z0-9_-]{40,}$/)
    await screenshot(page, 'backups-recovery-kit')
    await kit.getByRole('button', { name: 'I have saved it' }).click()
    const table = page.getByRole('table', { name: 'Repositories' })
    await table.getByRole('cell', { name: 'usb disk', exact: true }).waitFor()
    // The password is not on the page any more, nor in the API's answers.
    expect(await page.content()).not.toContain(password!)

    const repo = (await api('/api/backups/repositories')).items[0]
    await api('/api/backups/jobs', {
      name: 'documents',
      repositoryId: repo.id,
      folders: [join(work, 'docs')],
      intervalMinutes: 60,
    })

    await page.getByRole('tab', { name: 'Jobs' }).click()
    const job = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: 'documents' }) })
    await job.getByText('Never ran').waitFor()
    await job.getByRole('button', { name: 'Run now: documents' }).click()
    await job.getByText('Succeeded').waitFor({ timeout: 60_000 })
    await expectAccessible(page, 'backups with a job')
    await screenshot(page, 'backups-jobs')

    await page.getByRole('tab', { name: 'Snapshots and restore' }).click()
    await page
      .getByRole('button', { name: /^Browse snapshot / })
      .first()
      .click()
    // Down to the folder, one level at a time.
    for (const part of join(work, 'docs').split('/').filter(Boolean))
      await page.getByRole('button', { name: `Open ${part}`, exact: true }).click()
    await page
      .getByRole('list', { name: `Files in ${join(work, 'docs')}` })
      .getByText('notes.txt')
      .waitFor()
    await page.getByRole('button', { name: 'Restore notes.txt' }).click()
    const restore = page.getByRole('dialog', { name: 'Restore notes.txt' })
    await expectAccessible(page, 'restore a file')
    await screenshot(page, 'backups-restore')
    await restore.getByRole('button', { name: 'Restore' }).click()
    await expect
      .poll(() => readFile(join(work, 'root', 'restored', work, 'docs', 'notes.txt'), 'utf8').catch(() => ''))
      .toBe('notes to keep\n')
    await screenshot(page, 'backups-snapshots')
    ui.assertNoCspViolations()
  })

  it('has no Backups entry for an operator', async () => {
    const page = await ui.open('operator', '/')
    await page.getByRole('navigation').first().waitFor()
    expect(await page.getByRole('link', { name: 'Backups' }).count()).toBe(0)
  })
})
