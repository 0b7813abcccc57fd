/**
 * Restore at setup's own rules, apart from the end-to-end test (plugins/backups/test/setup-restore.browser.test.ts):
 * the attempts per address and one restic run at a time; the data folder swap, kept or rolled back.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { SetupState, swapDataFolder } from './setup-restore.ts'

describe('restore at setup', () => {
  const dirs: string[] = []
  afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))))

  it('allows 20 attempts per address in its window, and one run at a time', async () => {
    const state = new SetupState()
    for (let i = 0; i < 20; i++) await state.attempt('192.0.2.1', async () => i)
    await expect(state.attempt('192.0.2.1', async () => 0)).rejects.toMatchObject({ code: 'HOSTD_SETUP_THROTTLED' })
    // Another address has its own count, but waits for the run in progress.
    let release!: () => void
    const running = state.attempt('192.0.2.2', () => new Promise<void>((r) => (release = r)))
    await expect(state.attempt('192.0.2.3', async () => 0)).rejects.toMatchObject({ code: 'HOSTD_SETUP_BUSY' })
    release()
    await running
    expect(await state.attempt('192.0.2.3', async () => 'ran')).toBe('ran')
    state.restoring = true
    expect(() => state.assertOpen()).toThrow(expect.objectContaining({ code: 'HOSTD_SETUP_RESTORING' }))
  })

  it('swaps the restored content into the data folder, and rolls back to the fresh one', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'hostd-swap-'))
    dirs.push(parent)
    const data = join(parent, 'data')
    const make = async (restored: string) => {
      await mkdir(restored)
      await writeFile(join(restored, 'hostd.sqlite'), 'restored')
    }
    await mkdir(data)
    await writeFile(join(data, 'hostd.sqlite'), 'fresh')
    await make(join(parent, 'r1'))
    const kept = await swapDataFolder(data, join(parent, 'r1'))
    expect(await readFile(join(data, 'hostd.sqlite'), 'utf8')).toBe('restored')
    await kept.commit()
    expect((await readdir(parent)).sort()).toEqual(['data'])

    await make(join(parent, 'r2'))
    await writeFile(join(data, 'hostd.sqlite'), 'fresh again')
    const dropped = await swapDataFolder(data, join(parent, 'r2'))
    await dropped.rollback()
    expect(await readFile(join(data, 'hostd.sqlite'), 'utf8')).toBe('fresh again')
    expect((await readdir(parent)).sort()).toEqual(['data'])
  })
})
