/**
 * The Skills pages in Debian's Chromium against a real daemon (all built-in plugins), its real SQLite file, blob
 * store and watched sync folder: create a skill from the page (with a supporting file, and a refused one past
 * the 16 MiB limit), see it listed and filtered, edit it through a draft and publish, see revision 2 and view
 * revision 1, meet the stale-revision conflict after a concurrent change through the API and carry the text
 * over, disable it, and see a synced skill read-only with duplicate offered. Markdown is rendered without
 * running any HTML it holds.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../../../test/support/browser.ts'

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/

const DISK_CHECK = `---
description: Checks every disk's SMART health and free space, and says what to replace.
icon: hard-drive
category: maintenance
tags: [disks, health]
---

# Steps

1. Check the disks with \`smartctl -H\`.
2. Run \`scripts/check.sh\` and read its table.

| Disk | Action |
|---|---|
| failing | replace it |

- [x] written
- [ ] tried on a RAID

<script>window.injected = 'script'</script>
Inline HTML stays text: <img src=x onerror="window.injected='img'">
`

const NIGHTLY = `---
name: Nightly backup
description: Copies the shares to the backup disk every night.
icon: ☾
category: backup
tags: nightly, shares
---

Run \`rsync -a /srv/shares /mnt/backup\` and check its exit code.
`

describe('Skills pages', { timeout: 240_000 }, () => {
  let ui: UiHarness
  let page: Page
  let skillId = ''
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await ui.daemon.fetch(path, {
      method,
      headers: {
        authorization: `Bearer ${ui.adminToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json()) as any }
  }
  const heading = (name: string | RegExp) => page.getByRole('heading', { name, level: 1 })

  beforeAll(async () => {
    ui = await startUi({ builtinPlugins: true })
    page = await ui.open('admin', '/')
  }, 120_000)
  afterAll(() => ui?.close())

  it('shows the empty library, then a synced folder after a rescan', async () => {
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Skills' })
      .click({ timeout: 30_000 })
    await heading('Skills').waitFor()
    await page.getByText('No skills yet').waitFor()
    await page.getByText(join(ui.daemon.dataDir, 'skills', 'sync')).waitFor()
    await expectAccessible(page, 'skills, empty')
    await screenshot(page, 'skills-empty')

    const folder = join(ui.daemon.dataDir, 'skills', 'sync', 'nightly-backup')
    await mkdir(join(folder, 'bin'), { recursive: true })
    await writeFile(join(folder, 'SKILL.md'), NIGHTLY)
    await writeFile(join(folder, 'bin', 'backup.sh'), '#!/bin/sh\nrsync -a /srv/shares /mnt/backup\n')
    await page.getByRole('button', { name: 'Rescan now' }).click()
    await page.getByRole('link', { name: 'Nightly backup' }).waitFor({ timeout: 30_000 })
  })

  it('creates a skill from the page, refusing a file past the limit with a clear message', async () => {
    await page.getByRole('button', { name: 'New skill' }).first().click()
    await heading('New skill').waitFor()
    await page.getByRole('textbox', { name: 'Name' }).fill('Disk check')
    await page.getByRole('textbox', { name: 'SKILL.md' }).fill(DISK_CHECK)
    await page.getByRole('textbox', { name: 'Folder for new files (optional)' }).fill('scripts')
    const files = page.getByLabel('Supporting files', { exact: true })
    await files.setInputFiles({
      name: 'check.sh',
      mimeType: 'text/x-shellscript',
      buffer: Buffer.from('#!/bin/sh\nsmartctl -H /dev/sda\n'),
    })
    await page.getByRole('list', { name: 'Chosen files' }).getByText('scripts/check.sh').waitFor()

    // 17 MiB: refused before anything is read or sent, with the limit named; the list stays as it was.
    await files.setInputFiles({
      name: 'huge.iso',
      mimeType: 'application/octet-stream',
      buffer: Buffer.alloc(17 * 1024 * 1024),
    })
    await page.getByRole('alert').filter({ hasText: 'a file may be at most 16 MiB' }).waitFor()
    expect(await page.getByRole('list', { name: 'Chosen files' }).getByRole('listitem').count()).toBe(1)
    await expectAccessible(page, 'new skill, limit error')
    await screenshot(page, 'skills-new-limit')

    await page.getByRole('button', { name: 'Create skill' }).click()
    await heading('Disk check').waitFor({ timeout: 30_000 })
    skillId = UUID.exec(page.url())![0]
    expect(page.url()).toMatch(new RegExp(`/skills/${skillId}$`))

    // The instructions as formatted text; the HTML in them is shown, never run.
    await page.getByRole('heading', { name: 'Steps', level: 2 }).waitFor()
    await page.getByText(`<script>window.injected = 'script'</script>`).waitFor()
    await page.getByText(/Inline HTML stays text: <img src=x/).waitFor()
    expect(await page.evaluate(() => (window as { injected?: string }).injected)).toBeUndefined()
    await page.getByRole('img', { name: 'done' }).waitFor()
    await expectAccessible(page, 'skill page')
    await screenshot(page, 'skill-detail')

    // Its files, downloaded back byte for byte.
    await page.getByRole('tab', { name: 'Files (2)' }).click()
    expect(page.url()).toContain('?tab=files')
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Download scripts/check.sh' }).click(),
    ])
    expect(await readFile(await download.path(), 'utf8')).toBe('#!/bin/sh\nsmartctl -H /dev/sda\n')
    await expectAccessible(page, 'skill files')
    await screenshot(page, 'skill-files')
  })

  it('lists both skills and filters them by category and tag', async () => {
    await page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: 'Skills' }).click()
    await heading('Skills').waitFor()
    const table = page.getByRole('table', { name: 'Skills' })
    await table.getByRole('link', { name: 'Disk check' }).waitFor()
    await table.getByRole('link', { name: 'Nightly backup' }).waitFor()
    await expectAccessible(page, 'skills list')
    await screenshot(page, 'skills-list')

    await page.getByRole('combobox', { name: 'Category' }).selectOption('maintenance')
    await page.getByText('1 of 2 skills match').waitFor()
    expect(await table.getByRole('link', { name: 'Nightly backup' }).count()).toBe(0)
    expect(page.url()).toContain('category=maintenance')
    await page.getByRole('combobox', { name: 'Category' }).selectOption('')
    await page.getByRole('combobox', { name: 'Tag' }).selectOption('nightly')
    await page.getByText('1 of 2 skills match').waitFor()
    expect(await table.getByRole('link', { name: 'Disk check' }).count()).toBe(0)
    await page.getByRole('combobox', { name: 'Tag' }).selectOption('')
    await page.getByRole('searchbox', { name: 'Search' }).fill('SMART health')
    await expect.poll(() => table.getByRole('link', { name: 'Nightly backup' }).count()).toBe(0)
    await table.getByRole('link', { name: 'Disk check' }).waitFor()
    await page.getByRole('searchbox', { name: 'Search' }).fill('')
    await page.setViewportSize({ width: 390, height: 844 })
    await screenshot(page, 'skills-list-phone')
    await page.setViewportSize({ width: 1280, height: 860 })
  })

  it('edits through a draft, publishes revision 2, and shows revision 1', async () => {
    await page.getByRole('table', { name: 'Skills' }).getByRole('link', { name: 'Disk check' }).click()
    await heading('Disk check').waitFor()
    await page.getByRole('button', { name: 'Edit', exact: true }).click()
    await heading('Edit Disk check').waitFor({ timeout: 30_000 })
    const draftId = UUID.exec(page.url())![0]
    expect(page.url()).toMatch(new RegExp(`/skills/drafts/${draftId}$`))
    await page.getByText(/Expires in (24|23) hours/).waitFor()
    await page.getByText('Based on revision 1', { exact: true }).waitFor()
    const editor = page.getByRole('textbox', { name: 'Instructions (SKILL.md)' })
    expect(await editor.inputValue()).toContain('Check the disks with')
    await editor.fill((await editor.inputValue()).replace('Check the disks with', 'Check every disk with'))
    await page.getByText('Unsaved changes').waitFor()
    await page.getByRole('button', { name: 'Save draft' }).click()
    await page.getByText('All changes saved in the draft').waitFor()
    // The saved draft is on the server: it survives a reload, and the list offers to continue it.
    await page.reload()
    await heading('Edit Disk check').waitFor({ timeout: 30_000 })
    expect(await page.getByRole('textbox', { name: 'Instructions (SKILL.md)' }).inputValue()).toContain(
      'Check every disk with',
    )
    await expectAccessible(page, 'draft editor')
    await screenshot(page, 'skill-draft')

    await page.getByRole('button', { name: 'Publish' }).click()
    await heading('Disk check').waitFor({ timeout: 30_000 })
    await page.getByText('Check every disk with').waitFor()
    await page.getByRole('tab', { name: 'Revisions' }).click()
    const revisions = page.getByRole('table', { name: 'Revisions' })
    await revisions.getByRole('row').filter({ hasText: 'Revision 2' }).getByText('current').waitFor()
    await expectAccessible(page, 'skill revisions')
    await screenshot(page, 'skill-revisions')
    await revisions.getByRole('link', { name: 'Revision 1' }).click()
    await heading('Disk check, revision 1').waitFor()
    await page.getByText('Check the disks with').waitFor()
    await page.getByText('You are looking at an older revision: the skill is now at revision 2.').waitFor()
    await page.getByRole('button', { name: 'Restore this revision' }).waitFor()
    await expectAccessible(page, 'old revision')
    await screenshot(page, 'skill-revision-1')
    // Back works: the revision list again.
    await page.goBack()
    await page.getByRole('table', { name: 'Revisions' }).waitFor()
  })

  it('shows the stale-revision conflict after a concurrent change, and carries the text to a new draft', async () => {
    await page.getByRole('tab', { name: 'Instructions' }).click()
    await page.getByRole('button', { name: 'Edit', exact: true }).click()
    await heading('Edit Disk check').waitFor({ timeout: 30_000 })
    const firstDraft = UUID.exec(page.url())![0]
    await page.getByText('Based on revision 2', { exact: true }).waitFor()
    const editor = page.getByRole('textbox', { name: 'Instructions (SKILL.md)' })
    await editor.fill(`${await editor.inputValue()}\n3. Mail the report to the admin.\n`)

    // Meanwhile someone else replaces the skill through the API: it moves to revision 3.
    const current = await api('GET', `/api/skills/${skillId}`)
    const replaced = await api('PUT', `/api/skills/${skillId}`, {
      body: current.body.markdown.replace('Steps', 'Procedure'),
      baseRevision: 2,
    })
    expect(replaced.body.skill.revision).toBe(3)

    await page.getByRole('button', { name: 'Publish' }).click()
    const conflict = page
      .getByRole('alert')
      .filter({ has: page.getByRole('heading', { name: 'This skill changed while you were editing' }) })
    await conflict.waitFor({ timeout: 30_000 })
    await conflict.getByText('Your draft is based on revision 2, but the skill is now at revision 3').waitFor()
    expect(await page.getByRole('button', { name: 'Publish' }).isDisabled()).toBe(true)
    expect((await api('GET', `/api/skills/${skillId}`)).body.skill.revision).toBe(3)
    await expectAccessible(page, 'draft conflict')
    await screenshot(page, 'skill-conflict')

    await conflict.getByRole('button', { name: 'Carry my text to revision 3' }).click()
    await page.waitForURL((url) => UUID.test(url.pathname) && !url.pathname.includes(firstDraft), { timeout: 30_000 })
    await page.getByText('Based on revision 3', { exact: true }).waitFor()
    expect(await page.getByRole('textbox', { name: 'Instructions (SKILL.md)' }).inputValue()).toContain(
      'Mail the report to the admin',
    )
    await page.getByRole('button', { name: 'Publish' }).click()
    await heading('Disk check').waitFor({ timeout: 30_000 })
    // The draft page has the same heading: wait for the publish itself.
    await expect
      .poll(async () => (await api('GET', `/api/skills/${skillId}`)).body.skill.revision, { timeout: 30_000 })
      .toBe(4)
    const after = await api('GET', `/api/skills/${skillId}`)
    expect(after.body.markdown).toContain('Mail the report to the admin')
    // The first draft was discarded when its text moved on.
    expect((await api('GET', `/api/skills/drafts/${firstDraft}`)).status).toBe(404)
  })

  it('disables a skill from the list', async () => {
    await page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: 'Skills' }).click()
    const toggle = page.getByRole('switch', { name: 'Enabled: Disk check' })
    expect(await toggle.isChecked()).toBe(true)
    await toggle.uncheck()
    await page.getByText('Disk check is disabled').waitFor()
    await expect.poll(async () => (await api('GET', `/api/skills/${skillId}`)).body.skill.enabled).toBe(false)
    await expect.poll(() => toggle.isChecked()).toBe(false)
    await page.getByRole('table', { name: 'Skills' }).getByRole('link', { name: 'Disk check' }).click()
    await page.getByText('Disabled', { exact: true }).waitFor()
  })

  it('shows a synced skill read-only and offers a copy to edit', async () => {
    await page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: 'Skills' }).click()
    await page.getByRole('table', { name: 'Skills' }).getByRole('link', { name: 'Nightly backup' }).click()
    await heading('Nightly backup').waitFor()
    expect(await page.getByRole('button', { name: 'Edit', exact: true }).isDisabled()).toBe(true)
    await page.getByText(/Synced from the sync folder, so it is read-only here/).waitFor()
    expect(await page.getByRole('button', { name: 'Delete' }).count()).toBe(0)
    await page.getByRole('tab', { name: 'Files (2)' }).click()
    await page.getByRole('link', { name: 'Download bin/backup.sh' }).waitFor()
    await expectAccessible(page, 'synced skill')
    await screenshot(page, 'skill-synced')

    await page.getByRole('button', { name: 'Duplicate to edit' }).click()
    await heading('Nightly backup (copy)').waitFor({ timeout: 30_000 })
    expect(await page.getByRole('button', { name: 'Edit', exact: true }).isEnabled()).toBe(true)
    await page.getByText('Local', { exact: true }).waitFor()
    ui.assertNoCspViolations()
  })

  it('is not offered to an operator, whose requests are refused', async () => {
    const operator = await ui.open('operator', '/skills')
    await operator.getByRole('heading', { name: 'Page not found' }).waitFor({ timeout: 30_000 })
    expect(await operator.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Skills' }).count()).toBe(
      0,
    )
    expect(await operator.evaluate(async () => (await fetch('/api/skills')).status)).toBe(403)
  })
})
