/**
 * What must fail cleanly, against the real restic: a wrong repository password, an unreachable SFTP host, a full
 * target disk; and a run killed with SIGKILL mid-backup, after which the next run succeeds (its stale lock removed).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventually, freePort } from '@hostd/sdk/testing'
import { mountTmpfs, type Tmpfs } from '../../../test/support/tmpfs.ts'
import { backupsKernel, get, job, post, repository, runJob, type Harness } from './helpers.ts'
import { resticChildren } from './support/servers.ts'

describe('backups: failures change nothing', () => {
  let h: Harness
  let work: string
  let disk: Tmpfs | undefined
  beforeAll(async () => {
    h = await backupsKernel()
    work = await mkdtemp(join(tmpdir(), 'hostd-backups-fail-'))
    await mkdir(join(work, 'src'))
    await writeFile(join(work, 'src', 'file.txt'), 'keep me\n')
  })
  afterAll(async () => {
    await h?.t.close()
    await disk?.unmount()
    await rm(work, { recursive: true, force: true })
    await rm(h.root, { recursive: true, force: true })
  })

  const repositories = async () => (await get(h.t, '/api/backups/repositories')).json().items as { name: string }[]

  it('a wrong password is HOSTD_BACKUPS_WRONG_PASSWORD and stores nothing', async () => {
    await repository(h.t, 'right', { kind: 'local', path: join(work, 'pw-repo') }, { password: 'the right password' })
    const before = await repositories()
    const res = await post(h.t, '/api/backups/repositories', {
      name: 'wrong',
      location: { kind: 'local', path: join(work, 'pw-repo') },
      password: 'not the password',
      mode: 'open',
    })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toMatchObject({ error: 'HOSTD_BACKUPS_WRONG_PASSWORD' })
    expect(res.json().message).toMatch(/wrong password/)
    expect(await repositories()).toEqual(before)
    // And the right one opens it (no recovery kit: it was not made here).
    const opened = await repository(
      h.t,
      'again',
      { kind: 'local', path: join(work, 'pw-repo') },
      { password: 'the right password', mode: 'open' },
    )
    expect(opened.recoveryKit).toBeNull()
    // A folder without a repository, opened: its own code.
    const none = await post(h.t, '/api/backups/repositories', {
      name: 'none',
      location: { kind: 'local', path: join(work, 'nothing-here') },
      password: 'whatever password',
      mode: 'open',
    })
    expect(none.json()).toMatchObject({ error: 'HOSTD_BACKUPS_NO_REPOSITORY' })
  })

  it('an unreachable SFTP host is HOSTD_BACKUPS_UNREACHABLE and stores nothing', async () => {
    const before = await repositories()
    const res = await post(h.t, '/api/backups/repositories', {
      name: 'nas',
      location: { kind: 'sftp', host: '127.0.0.1', port: await freePort(), user: 'root', path: '/srv/backups' },
    })
    expect(res.statusCode).toBe(502)
    expect(res.json()).toMatchObject({ error: 'HOSTD_BACKUPS_UNREACHABLE' })
    expect(await repositories()).toEqual(before)
  })

  it('a full target disk is HOSTD_BACKUPS_TARGET_FULL; the repository keeps its snapshots', async () => {
    disk = await mountTmpfs(24)
    const created = await repository(h.t, 'small', { kind: 'local', path: join(disk.dir, 'repo') })
    const id = await job(h.t, { name: 'to-small', repositoryId: created.repository.id, folders: [join(work, 'src')] })
    expect((await runJob(h.t, id)).json().status).toBe('success')
    await writeFile(join(work, 'src', 'big.bin'), randomBytes(4 * 1024 * 1024))
    await disk.fill()
    const res = await runJob(h.t, id)
    expect(res.statusCode).toBe(507)
    expect(res.json()).toMatchObject({ error: 'HOSTD_BACKUPS_TARGET_FULL' })
    expect(res.json().message, res.json().message).toMatch(/no space left on device/)
    const jobView = (await get(h.t, `/api/backups/jobs/${id}`)).json()
    expect(jobView.lastResult).toMatchObject({ status: 'failure', error: { code: 'HOSTD_BACKUPS_TARGET_FULL' } })
    await disk.free()
    const snaps = (await get(h.t, `/api/backups/repositories/${created.repository.id}/snapshots`)).json().items
    expect(snaps).toHaveLength(1)
    await rm(join(work, 'src', 'big.bin'))
  })

  it('a run killed with SIGKILL mid-backup fails as interrupted, and the next run succeeds', async () => {
    const big = join(work, 'big')
    await mkdir(big)
    // Many files, so restic is still reading when it is killed.
    for (let i = 0; i < 96; i++) await writeFile(join(big, `f${i}`), randomBytes(1024 * 1024))
    const created = await repository(h.t, 'killed', { kind: 'local', path: join(work, 'kill-repo') })
    const id = await job(h.t, { name: 'to-kill', repositoryId: created.repository.id, folders: [big] })
    expect((await post(h.t, `/api/backups/jobs/${id}/run`)).statusCode).toBe(202)
    // The backup's own restic (after unlock), then SIGKILL.
    const pid = await eventually(async () => {
      const view = (await get(h.t, `/api/backups/jobs/${id}`)).json()
      // A status line from restic: it holds its lock by then.
      if (view.progress?.phase !== 'backup' || !view.progress.totalBytes) return null
      return (await resticChildren())[0] ?? null
    }, 5)
    process.kill(pid, 'SIGKILL')
    const failed = await eventually(async () => {
      const view = (await get(h.t, `/api/backups/jobs/${id}`)).json()
      return !view.running && view.lastResult ? view.lastResult : null
    })
    // restic may have finished between the check and the signal; then the run succeeded and there is nothing to test.
    expect(failed).toMatchObject({ status: 'failure', error: { code: 'HOSTD_BACKUPS_INTERRUPTED' } })
    // The killed restic left its lock in the repository.
    expect((await readdir(join(work, 'kill-repo', 'locks'))).length).toBe(1)
    const next = await runJob(h.t, id)
    expect(next.statusCode, next.body).toBe(200)
    expect(next.json()).toMatchObject({ status: 'success' })
    expect(next.json().notes).toContain('a stale lock was removed')
    expect(await readdir(join(work, 'kill-repo', 'locks'))).toEqual([])
  })
})
