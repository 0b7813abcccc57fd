/**
 * The storage page in Debian's Chromium against a real daemon, the real root helper (its storage settings pointing
 * into a temp dir), a real smbd on loopback and smbclient: what each role sees, SMART's "no SMART here" answer,
 * the file browser (upload with progress through the picker and by drag and drop, download back with the same
 * SHA-256, preview, 409/413/403), a folder shared over SMB from the page and read with smbclient, and mounting:
 * the helper's own error, the notice while the helper is stopped, and a dry-run mount and unmount.
 */
import { createHash, randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, readFile, rm, stat, statfs, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { crc32, deflateSync } from 'node:zlib'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../../../test/support/browser.ts'
import { startHelper, type RunningHelper } from '../../../helper/test/start-helper.ts'
import { startSmbd, type Smbd } from './support/smbd.ts'

const MiB = 1024 * 1024
/** A real 24x24 PNG (a colour gradient), made here so the thumbnail has something to show. */
function png(): Buffer {
  const chunk = (type: string, body: Buffer) => {
    const head = Buffer.concat([Buffer.from(type, 'latin1'), body])
    const out = Buffer.alloc(body.length + 12)
    out.writeUInt32BE(body.length, 0)
    head.copy(out, 4)
    out.writeUInt32BE(crc32(head), body.length + 8)
    return out
  }
  const rows = Array.from({ length: 24 }, (_, y) =>
    Buffer.from([0, ...Array.from({ length: 24 }, (_, x) => [x * 10, 90, 240 - y * 10]).flat()]),
  )
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(24, 0)
  ihdr.writeUInt32BE(24, 4)
  ihdr.set([8, 2, 0, 0, 0], 8)
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ])
}
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')

describe('storage pages', { timeout: 180_000 }, () => {
  let base: string
  let data: string
  let smbd: Smbd
  let helper: RunningHelper
  let helperEnv: Record<string, string>
  let ui: UiHarness

  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'hostd-storage-ui-'))
    await chmod(base, 0o755) // smbd's guest account (nobody) must reach the shared folder
    data = join(base, 'data')
    await mkdir(join(data, 'docs'), { recursive: true })
    await mkdir(join(data, 'media'))
    await writeFile(join(data, 'docs', 'readme.txt'), 'Welcome to the shared files.\nSecond line.\n')
    await writeFile(
      join(data, 'docs', 'server.log'),
      Array.from({ length: 3000 }, (_, i) => `line ${i}: ${'x'.repeat(40)}`).join('\n'),
    ) // > 64 KiB
    await writeFile(join(data, 'docs', 'blob.bin'), Buffer.from([0, 1, 2, 3, 0, 255]))
    await writeFile(join(data, 'media', 'song.txt'), 'la la la\n')
    await mkdir(join(data, 'manage', 'old'), { recursive: true })
    await writeFile(join(data, 'manage', 'photo.png'), png())
    await writeFile(join(data, 'manage', 'notes.txt'), 'notes\n')
    await mkdir(join(data, 'many'))
    for (let i = 0; i < 230; i++) await writeFile(join(data, 'many', `file-${String(i).padStart(3, '0')}.txt`), '')
    smbd = await startSmbd(join(base, 'samba'))
    helperEnv = {
      HOSTD_HELPER_SMB_CONF: smbd.conf,
      HOSTD_HELPER_SMB_SHARES: smbd.shares,
      HOSTD_HELPER_EXPORT_ROOTS: base,
      HOSTD_HELPER_MOUNT_ROOT: join(base, 'mnt'),
      HOSTD_HELPER_CREDENTIALS_DIR: join(base, 'creds'),
    }
    helper = await startHelper({ env: helperEnv })
    ui = await startUi({
      builtinPlugins: true,
      env: {
        HOSTD_HELPER_SOCKET: helper.socket,
        HOSTD_FILE_ROOTS: `files=${data}`,
        HOSTD_STORAGE_UPLOAD_MAX_BYTES: String(8 * MiB),
        HOSTD_STORAGE_MOUNT_ROOT: join(base, 'mnt'),
      },
    })
  }, 120_000)
  afterAll(async () => {
    await ui?.close()
    await helper?.stop()
    await smbd?.stop()
    if (base) await rm(base, { recursive: true, force: true })
  })

  const main = (page: Page) => page.getByRole('main')

  it('a viewer sees volumes with usage and the disks, and no operator or admin controls', async () => {
    const page = await ui.open('viewer', '/storage')
    await page.getByRole('heading', { name: 'Storage', level: 1 }).waitFor()
    await page.getByRole('meter', { name: 'Usage of /', exact: true }).waitFor()
    await main(page).getByText('/dev/vda', { exact: true }).last().waitFor()
    // The share df reports for / (used / (used + available)), not used / size: here the two differ by half.
    const root = await statfs('/')
    const dfPercent = Math.round((100 * (root.blocks - root.bfree)) / (root.blocks - root.bfree + root.bavail))
    const meter = page.getByRole('meter', { name: 'Usage of /', exact: true })
    expect(await meter.getAttribute('aria-valuetext')).toMatch(/GiB used, .* GiB free \(\d+ %\)/)
    expect(Math.abs(Number(await meter.getAttribute('aria-valuenow')) - dfPercent)).toBeLessThanOrEqual(1)
    expect(await page.getByRole('tab').allTextContents()).toEqual(['Disks and volumes', 'Network shares'])
    expect(
      await main(page)
        .getByRole('button', { name: /SMART|Eject/ })
        .count(),
    ).toBe(0)
    await expectAccessible(page, 'storage (viewer)')
    await screenshot(page, 'storage-disks-viewer')

    await page.getByRole('tab', { name: 'Network shares' }).click()
    await page.waitForURL(/\/storage\/shares$/)
    await page.getByText('No network shares mounted').waitFor()
    await page.getByText('No folders are shared').waitFor()
    expect(
      await main(page)
        .getByRole('button', { name: /Mount a share|Share a folder/ })
        .count(),
    ).toBe(0)
    await expectAccessible(page, 'storage shares (viewer)')
    await page.goBack()
    await page.getByRole('meter', { name: 'Usage of /', exact: true }).waitFor()
  })

  it('an operator reads SMART ("cannot read SMART on this disk"), browses and previews files, and has no upload', async () => {
    const page = await ui.open('operator', '/storage')
    await page.getByRole('button', { name: 'SMART report of vda' }).click()
    const dialog = page.getByRole('dialog', { name: 'SMART report of /dev/vda' })
    await dialog.getByText('SMART cannot be read on this disk').waitFor({ timeout: 30_000 })
    await dialog
      .getByText(/Unable to detect device type|SMART/i)
      .first()
      .waitFor()
    expect(page.url()).toMatch(/\?smart=vda$/)
    await expectAccessible(page, 'SMART dialog')
    await screenshot(page, 'storage-smart-unavailable')
    await dialog.getByRole('button', { name: 'Close' }).last().click()
    await dialog.waitFor({ state: 'detached' })

    await page.getByRole('tab', { name: 'Files' }).click()
    await page.waitForURL(/\/storage\/files$/)
    await main(page).getByRole('link', { name: 'docs', exact: true }).click()
    await page.waitForURL(/\/storage\/files\?root=files&path=docs$/)
    await main(page).getByRole('link', { name: 'readme.txt', exact: true }).waitFor()
    expect(await page.getByRole('button', { name: 'Choose files' }).count()).toBe(0)
    expect(await page.getByRole('button', { name: 'Share this folder' }).count()).toBe(0)
    await expectAccessible(page, 'files (operator)')
    await screenshot(page, 'storage-files-operator')

    await main(page).getByRole('link', { name: 'readme.txt', exact: true }).click()
    const preview = page.getByRole('dialog', { name: 'readme.txt' })
    await preview.getByText('Welcome to the shared files.').waitFor()
    expect(await preview.getByText('Truncated').count()).toBe(0)
    await page.goBack() // the preview has its own URL: back closes it
    await preview.waitFor({ state: 'detached' })

    await page.getByRole('button', { name: 'Preview server.log' }).click()
    const log = page.getByRole('dialog', { name: 'server.log' })
    await log.getByText(/Only the first 64\.0 KiB of .* are shown/).waitFor()
    expect(await log.getByLabel('Contents of server.log').textContent()).toMatch(/^line 0: x+/)
    await expectAccessible(page, 'truncated preview')
    await screenshot(page, 'storage-preview-truncated')
    await log.getByRole('button', { name: 'Close' }).last().click()

    await page.getByRole('button', { name: 'Preview blob.bin' }).click()
    await page.getByRole('dialog', { name: 'blob.bin' }).getByText('This file is not text').waitFor()
    await page.getByRole('dialog', { name: 'blob.bin' }).getByRole('button', { name: 'Close' }).last().click()
    ui.assertNoCspViolations()
  })

  it('an admin uploads with a progress bar (picker and drop), downloads it back with the same SHA-256, and sees 409, 413 and 403', async () => {
    for (const name of ['payload.bin', 'dropped.txt']) await rm(join(data, 'docs', name), { force: true }) // a retry starts from the same state
    const payload = randomBytes(3 * MiB)
    const payloadFile = join(base, 'payload.bin')
    await writeFile(payloadFile, payload)
    const page = await ui.open('admin', '/storage/files?root=files&path=docs')
    await main(page).getByRole('link', { name: 'readme.txt', exact: true }).waitFor()

    // Slow the upload down (DevTools network emulation) so the bar is seen between empty and full.
    const cdp = await page.context().newCDPSession(page)
    await cdp.send('Network.enable')
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: 1 * MiB,
    })
    await page.getByLabel('Files to upload to files/docs').setInputFiles(payloadFile)
    const bar = page.getByRole('progressbar', { name: 'payload.bin' })
    const seen = new Set<number>()
    await expect
      .poll(
        async () => {
          const now = Number(await bar.getAttribute('aria-valuenow').catch(() => null))
          if (now > 0 && now < payload.length) seen.add(now)
          return seen.size
        },
        { timeout: 60_000, interval: 50 },
      )
      .toBeGreaterThan(0)
    await screenshot(page, 'storage-upload-progress')
    await page.getByText('Uploaded · 3.0 MiB').waitFor({ timeout: 60_000 })
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: -1,
    })
    expect(await bar.getAttribute('aria-valuenow')).toBe(String(payload.length))
    await main(page).getByRole('link', { name: 'payload.bin', exact: true }).waitFor() // the listing was refreshed
    expect(sha256(await readFile(join(data, 'docs', 'payload.bin')))).toBe(sha256(payload))

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Download payload.bin' }).click(),
    ])
    expect(download.suggestedFilename()).toBe('payload.bin')
    expect(sha256(await readFile((await download.path())!))).toBe(sha256(payload))

    // Drag and drop: a file dropped on the zone is uploaded like a picked one.
    const dropped = await page.evaluateHandle(() => {
      const transfer = new DataTransfer()
      transfer.items.add(new File(['dropped from the desktop\n'], 'dropped.txt', { type: 'text/plain' }))
      return transfer
    })
    await page
      .getByText(/Drop files here or on the list to upload them to/)
      .dispatchEvent('drop', { dataTransfer: dropped })
    await main(page).getByRole('link', { name: 'dropped.txt', exact: true }).waitFor()
    expect(await readFile(join(data, 'docs', 'dropped.txt'), 'utf8')).toBe('dropped from the desktop\n')

    // The same name again: 409, then Replace.
    await writeFile(payloadFile, Buffer.from('replaced'))
    await page.getByLabel('Files to upload to files/docs').setInputFiles(payloadFile)
    await page.getByText('A file with this name is already there').waitFor()
    await screenshot(page, 'storage-upload-exists')
    await page.getByRole('button', { name: 'Replace payload.bin' }).click()
    await page.getByText('Uploaded · 8 B').waitFor()
    expect(await readFile(join(data, 'docs', 'payload.bin'), 'utf8')).toBe('replaced')

    // Over the server's limit (8 MiB here): 413, said clearly, nothing left behind.
    const tooBig = join(base, 'too-big.bin')
    await writeFile(tooBig, Buffer.alloc(9 * MiB))
    await page.getByLabel('Files to upload to files/docs').setInputFiles(tooBig)
    await page.getByText(/Too large for this server/).waitFor({ timeout: 60_000 })
    expect(existsSync(join(data, 'docs', 'too-big.bin'))).toBe(false)
    await expectAccessible(page, 'files with uploads (admin)')
    await screenshot(page, 'storage-files-admin')

    // Outside the root: the server's 403, said as such, with a way back.
    await page.goto(`${ui.url}/storage/files?root=files&path=docs/../..`)
    await page.getByText('This path leads outside the file root').waitFor()
    await main(page).getByText('A ".." segment is refused').waitFor() // the server's own reason
    await expectAccessible(page, 'files: forbidden path')
    await screenshot(page, 'storage-files-forbidden')
    await main(page).getByRole('link', { name: 'Open files instead' }).click()
    await main(page).getByRole('link', { name: 'docs', exact: true }).click()
    await page.setViewportSize({ width: 390, height: 844 }) // a phone: secondary columns give way
    await main(page).getByRole('link', { name: 'readme.txt', exact: true }).waitFor()
    await expectAccessible(page, 'files at phone width')
    await screenshot(page, 'storage-files-phone')
    ui.assertNoCspViolations()
  })

  it('an admin manages files: new folder, rename, thumbnail, select and copy, move, delete (confirmed), drop on the list, pages', async () => {
    const page = await ui.open('admin', '/storage/files?root=files&path=manage')
    const list = main(page).getByRole('table', { name: 'Contents of files/manage' })
    await list.getByRole('link', { name: 'photo.png', exact: true }).waitFor()
    // The thumbnail is the image itself, drawn.
    const thumb = list.locator('img.storage-thumb')
    await expect.poll(() => thumb.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(24)

    await main(page).getByRole('button', { name: 'New folder' }).click()
    let dialog = page.getByRole('dialog', { name: 'New folder in files/manage' })
    await dialog.getByRole('textbox', { name: 'Folder name' }).fill('archive')
    await dialog.getByRole('button', { name: 'Create folder' }).click()
    await list.getByRole('link', { name: 'archive', exact: true }).waitFor()

    await list.getByRole('button', { name: 'Rename notes.txt' }).click()
    dialog = page.getByRole('dialog', { name: 'Rename notes.txt' })
    await dialog.getByRole('textbox', { name: 'New name' }).fill('notes-2026.txt')
    await dialog.getByRole('button', { name: 'Rename' }).click()
    await list.getByRole('link', { name: 'notes-2026.txt', exact: true }).waitFor()

    const pick = async () => {
      await list.getByRole('checkbox', { name: 'Select photo.png' }).check()
      await list.getByRole('checkbox', { name: 'Select notes-2026.txt' }).check()
      await page.getByRole('toolbar', { name: 'Selected entries' }).getByText('2 selected').waitFor()
    }
    await pick()
    await screenshot(page, 'storage-files-selected')
    await page.getByRole('button', { name: 'Copy to…' }).click()
    dialog = page.getByRole('dialog', { name: 'Copy 2 items' })
    await dialog.getByRole('button', { name: 'archive', exact: true }).click()
    await dialog.getByText('files/manage/archive').waitFor()
    await expectAccessible(page, 'copy dialog')
    await dialog.getByRole('button', { name: 'Copy here' }).click()
    await dialog.waitFor({ state: 'detached' })
    expect((await readFile(join(data, 'manage', 'archive', 'photo.png'))).equals(png())).toBe(true)
    expect(await readFile(join(data, 'manage', 'archive', 'notes-2026.txt'), 'utf8')).toBe('notes\n')

    await pick()
    await page.getByRole('button', { name: 'Move to…' }).click()
    dialog = page.getByRole('dialog', { name: 'Move 2 items' })
    await dialog.getByRole('button', { name: 'old', exact: true }).click()
    await dialog.getByRole('button', { name: 'Move here' }).click()
    await dialog.waitFor({ state: 'detached' })
    await list.getByRole('link', { name: 'photo.png', exact: true }).waitFor({ state: 'detached' })
    expect(existsSync(join(data, 'manage', 'old', 'photo.png'))).toBe(true)

    await list.getByRole('button', { name: 'Delete old' }).click()
    const confirmDelete = page.getByRole('dialog', { name: 'Delete old?' })
    await confirmDelete.getByText(/cannot be undone/).waitFor()
    await screenshot(page, 'storage-files-delete-confirm')
    await confirmDelete.getByRole('button', { name: 'Delete' }).click()
    await list.getByRole('link', { name: 'old', exact: true }).waitFor({ state: 'detached' })
    expect(existsSync(join(data, 'manage', 'old'))).toBe(false)

    // Files dropped on the list itself are uploaded there.
    const dropped = await page.evaluateHandle(() => {
      const transfer = new DataTransfer()
      transfer.items.add(new File(['on the list\n'], 'dropped-on-list.txt', { type: 'text/plain' }))
      return transfer
    })
    await list.dispatchEvent('drop', { dataTransfer: dropped })
    await list.getByRole('link', { name: 'dropped-on-list.txt', exact: true }).waitFor()
    expect(await readFile(join(data, 'manage', 'dropped-on-list.txt'), 'utf8')).toBe('on the list\n')
    await expectAccessible(page, 'file manager (admin)')
    await screenshot(page, 'storage-files-manage')

    const noSideways = () => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)
    await page.setViewportSize({ width: 390, height: 844 })
    await list.getByRole('button', { name: 'Rename archive' }).waitFor()
    expect(await noSideways()).toBe(true)
    await screenshot(page, 'storage-files-manage-phone')
    await page.setViewportSize({ width: 1440, height: 900 })

    // A big folder comes a page at a time.
    await page.goto(`${ui.url}/storage/files?root=files&path=many`)
    const many = main(page).getByRole('table', { name: 'Contents of files/many' })
    await many.getByRole('link', { name: 'file-199.txt', exact: true }).waitFor()
    expect(await many.getByRole('link', { name: 'file-200.txt', exact: true }).count()).toBe(0)
    await main(page).getByText('200 of 230 shown.').waitFor()
    await main(page).getByRole('button', { name: 'Show 30 more' }).click()
    await many.getByRole('link', { name: 'file-229.txt', exact: true }).waitFor()
    ui.assertNoCspViolations()
  })

  it('the overview shows storage per filesystem, the share used as df computes it', async () => {
    const page = await ui.open('viewer', '/')
    const meter = page.getByRole('meter', { name: 'Storage used on /', exact: true })
    await meter.waitFor()
    const root = await statfs('/')
    const dfPercent = Math.round((100 * (root.blocks - root.bfree)) / (root.blocks - root.bfree + root.bavail))
    expect(Math.abs(Number(await meter.getAttribute('aria-valuenow')) - dfPercent)).toBeLessThanOrEqual(1)
    await screenshot(page, 'storage-overview-card')
    await page.setViewportSize({ width: 390, height: 844 })
    await meter.waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true)
    await screenshot(page, 'storage-overview-card-phone')
  })

  it('an admin shares a folder over SMB from the page; smbclient reads it; stopping it (confirmed) takes it away', async () => {
    const page = await ui.open('admin', '/storage/shares')
    await page.getByRole('button', { name: 'Share a folder' }).click()
    const dialog = page.getByRole('dialog', { name: 'Share a folder over SMB' })
    await dialog.getByRole('textbox', { name: /^Folder inside/ }).fill('media')
    await dialog.getByRole('textbox', { name: 'Share name' }).fill('media-share')
    await dialog.getByRole('textbox', { name: 'Description (optional)' }).fill('Songs and films')
    await dialog.getByRole('checkbox', { name: 'Allow guests' }).check()
    await expectAccessible(page, 'share folder dialog')
    await screenshot(page, 'storage-share-dialog')
    await dialog.getByRole('button', { name: 'Share folder' }).click()
    await dialog.waitFor({ state: 'detached' })
    const table = page.getByRole('table', { name: 'Folders shared over SMB' })
    await table.getByText('media-share').waitFor()
    await table.getByText(join(data, 'media')).waitFor()

    const got = join(base, 'got-song.txt')
    let fetched = { code: -1, out: '' }
    for (let i = 0; i < 50 && fetched.code !== 0; i++) {
      fetched = await smbd.client(['//127.0.0.1/media-share', '-c', `get song.txt ${got}`])
      if (fetched.code !== 0) await new Promise((r) => setTimeout(r, 100))
    }
    expect(fetched.code, fetched.out).toBe(0)
    expect(await readFile(got, 'utf8')).toBe('la la la\n')
    await expectAccessible(page, 'shares with an export')
    await screenshot(page, 'storage-shares-admin')
    await page.setViewportSize({ width: 390, height: 844 }) // a phone: rows are cards, nothing scrolls sideways
    await table.getByText('media-share').waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true)
    await screenshot(page, 'storage-shares-admin-phone')
    await page.setViewportSize({ width: 1440, height: 900 })

    await page.getByRole('button', { name: 'Stop sharing media-share' }).click()
    const confirm = page.getByRole('dialog', { name: 'Stop sharing media-share?' })
    await confirm.getByRole('button', { name: 'Stop sharing' }).click()
    await page.getByText('No folders are shared').waitFor()
    await expect
      .poll(async () => (await smbd.client(['//127.0.0.1/media-share', '-c', 'ls'])).out, { timeout: 10_000 })
      .toContain('NT_STATUS_BAD_NETWORK_NAME')

    // Samba stopped: the error says so and what to do, smbcontrol's own text under "Details".
    await smbd.stop()
    await page.getByRole('button', { name: 'Share a folder' }).click()
    const again = page.getByRole('dialog', { name: 'Share a folder over SMB' })
    await again.getByRole('textbox', { name: /^Folder inside/ }).fill('media')
    await again.getByRole('textbox', { name: 'Share name' }).fill('late-share')
    await again.getByRole('button', { name: 'Share folder' }).click()
    await again.getByText(/Samba \(smbd\) is not running.*start it/).waitFor()
    await again.getByText('Details').click()
    await again.getByText("Can't find pid for destination 'smbd'", { exact: false }).waitFor()
    await screenshot(page, 'storage-share-samba-stopped')
    await again.getByRole('button', { name: 'Cancel' }).click()
  })

  it("mounting: the helper's own error is shown; without the helper the page says so; in dry run a share is mounted and unmounted", async () => {
    const page = await ui.open('admin', '/storage/shares')
    await page.getByRole('button', { name: 'Mount a share' }).click()
    let dialog = page.getByRole('dialog', { name: 'Mount a network share' })
    await dialog.getByRole('textbox', { name: 'SMB address' }).fill('smb://127.0.0.1/hostd-test-no-such-share')
    await dialog.getByRole('textbox', { name: 'Name on this server' }).fill('nothing')
    await dialog.getByRole('button', { name: 'Mount' }).click()
    await dialog.getByRole('alert').waitFor({ timeout: 60_000 }) // this kernel has no cifs: mount's own message
    expect(await dialog.getByRole('alert').textContent()).toMatch(/mount|cifs/i)
    await screenshot(page, 'storage-mount-error')
    await dialog.getByRole('button', { name: 'Cancel' }).click()

    await helper.stop(true)
    await page.reload()
    await page.getByText('Admin Privileges are not available: the root helper is not running').waitFor()
    await page.getByText('sudo systemctl enable --now hostd-helper').waitFor()
    expect(await page.getByRole('button', { name: 'Mount a share' }).isDisabled()).toBe(true) // the notice says why
    await expectAccessible(page, 'storage without the helper')
    await screenshot(page, 'storage-no-helper')

    helper = await startHelper({ env: helperEnv, dryRun: true, dir: helper.dir })
    await page.getByRole('button', { name: 'Check again' }).click()
    await page.getByText('Admin Privileges are not available').waitFor({ state: 'detached' })
    await page.getByRole('button', { name: 'Mount a share' }).click()
    dialog = page.getByRole('dialog', { name: 'Mount a network share' })
    await dialog.getByRole('combobox', { name: 'Give the share as' }).selectOption('parts')
    await dialog.getByRole('textbox', { name: 'Server', exact: true }).fill('nas.example')
    await dialog.getByRole('textbox', { name: 'Share', exact: true }).fill('Media')
    await dialog.getByRole('textbox', { name: 'Name on this server' }).fill('nas-media')
    await dialog.getByRole('textbox', { name: 'User name (optional)' }).fill('alice')
    await dialog.getByLabel('Password (optional)').fill('s3cret pass')
    await expectAccessible(page, 'mount dialog')
    await screenshot(page, 'storage-mount-dialog')
    await dialog.getByRole('button', { name: 'Mount' }).click()
    await dialog.waitFor({ state: 'detached' })
    const table = page.getByRole('table', { name: 'Mounted network shares' })
    await table.getByText('//nas.example/Media').waitFor()
    await table.getByText('Not mounted').waitFor() // dry run: the record is kept, nothing was mounted
    const cred = join(base, 'creds', 'nas-media.cred')
    expect(await readFile(cred, 'utf8')).toBe('username=alice\npassword=s3cret pass\n')
    expect((await stat(cred)).mode & 0o777).toBe(0o600)
    await screenshot(page, 'storage-shares-mounted')

    await page.getByRole('button', { name: 'Unmount nas-media' }).click()
    await page.getByRole('dialog', { name: 'Unmount nas-media?' }).getByRole('button', { name: 'Unmount' }).click()
    await page.getByText('No network shares mounted').waitFor()
    expect(existsSync(cred)).toBe(false)
    ui.assertNoCspViolations()
  })
})
