/**
 * Backups through the root helper (HOSTD_BACKUPS_ROOT_HELPER=1; here the plugin's `rootHelper` option): the run's `restic backup` goes to the real helper's
 * `backups.restic-backup` (restic as the daemon's user with CAP_DAC_READ_SEARCH; here the daemon runs as root, so the
 * test proves the route and the result, and helper/test/restic-backup.test.ts proves the reading as a non-root user),
 * with its progress from the helper's events; the snapshot is browsed and restored by the daemon's own restic.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHelper, type RunningHelper } from '../../../helper/test/start-helper.ts'
import { backupsKernel, get, job, repository, runJob, type Harness } from './helpers.ts'

describe('backups through the root helper', () => {
  let h: Harness
  let helper: RunningHelper
  let work: string
  beforeAll(async () => {
    helper = await startHelper()
    work = await mkdtemp(join(tmpdir(), 'hostd-backups-helper-'))
    h = await backupsKernel({ env: { HOSTD_HELPER_SOCKET: helper.socket }, rootHelper: true })
  })
  afterAll(async () => {
    await h?.t.close()
    await helper?.stop()
    await rm(work, { recursive: true, force: true })
    await rm(h?.root ?? '', { recursive: true, force: true })
  })

  it('runs restic backup through the helper, and the snapshot is the daemon’s to browse', async () => {
    const src = join(work, 'src')
    await mkdir(src, { mode: 0o700 })
    await writeFile(join(src, 'only-root.txt'), 'root data\n', { mode: 0o600 })
    const repo = await repository(h.t, 'usb', { kind: 'local', path: join(work, 'repo') })
    const id = await job(h.t, { name: 'as-root', repositoryId: repo.repository.id, folders: [src] })
    const result = (await runJob(h.t, id)).json()
    expect(result).toMatchObject({ status: 'success', error: null, filesNew: expect.any(Number) })
    expect(result.bytesProcessed).toBeGreaterThan(0)
    const runs = (await helper.log()).filter((e) => e.action === 'backups.restic-backup')
    expect(runs).toHaveLength(1)
    expect(runs[0]).toMatchObject({ outcome: 'ok', exitCode: 0 })
    expect(runs[0]!.argv.slice(0, 1)).toEqual(['setpriv'])
    expect(runs[0]!.args.repository).toBe('<redacted>')
    const snaps = (await get(h.t, `/api/backups/repositories/${repo.repository.id}/snapshots`)).json().items
    const files = await get(
      h.t,
      `/api/backups/repositories/${repo.repository.id}/snapshots/${snaps[0].id}/files?path=${encodeURIComponent(src)}`,
    )
    expect(files.json().items.map((f: { name: string }) => f.name)).toEqual(['only-root.txt'])
  })
})
