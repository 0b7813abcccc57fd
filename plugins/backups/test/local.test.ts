import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventually, openSocket } from '@hostd/sdk/testing'
import { backupsKernel, get, job, post, repository, runJob, type Harness } from './helpers.ts'

describe('backups to a local folder', () => {
  let h: Harness
  let work: string
  beforeAll(async () => {
    h = await backupsKernel()
    work = await mkdtemp(join(tmpdir(), 'hostd-backups-local-'))
  })
  afterAll(async () => {
    await h?.t.close()
    await rm(work, { recursive: true, force: true })
    await rm(h.root, { recursive: true, force: true })
  })

  it('backs up hostd and a folder, lists, browses and restores', async () => {
    const src = join(work, 'src')
    await mkdir(join(src, 'sub'), { recursive: true })
    await writeFile(join(src, 'a.txt'), 'alpha\n')
    await writeFile(join(src, 'sub', 'b.txt'), 'beta\n')
    const created = await repository(h.t, 'usb', { kind: 'local', path: join(work, 'repo') })
    expect(created.recoveryKit?.password).toMatch(/^[A-Za-z0-9_-]{40,}$/)
    expect(created.recoveryKit?.text).toContain(join(work, 'repo'))
    const listed = (await get(h.t, '/api/backups/repositories')).json()
    expect(JSON.stringify(listed)).not.toContain(created.recoveryKit!.password)
    const id = await job(h.t, { name: 'nightly', repositoryId: created.repository.id, folders: [src] })
    // Progress and the result over the socket, as the page gets them.
    const live = openSocket(h.t, '/api/backups/live', (await h.t.login('admin')).token)
    await new Promise((resolve) => live.ws.once('open', resolve))
    const res = await runJob(h.t, id)
    await live.waitFor((m) => m.type === 'progress' && m.jobId === id && m.phase === 'backup')
    const sent = await live.waitFor((m) => m.type === 'result' && m.jobId === id)
    expect(sent.result).toMatchObject({ status: 'success' })
    live.ws.close()
    // An operator may not listen.
    const refused = openSocket(h.t, '/api/backups/live', (await h.t.login('operator')).token)
    expect(await refused.closed).toEqual({ code: 403, reason: 'http' })
    expect(res.statusCode, res.body).toBe(200)
    const result = res.json()
    expect(result).toMatchObject({ status: 'success', error: null })
    expect(result.snapshotId).toMatch(/^[0-9a-f]{8}$/)

    const snaps = (await get(h.t, `/api/backups/repositories/${created.repository.id}/snapshots`)).json().items
    expect(snaps).toHaveLength(1)
    expect(snaps[0].jobId).toBe(id)
    const snap = snaps[0].id
    const files = (
      await get(
        h.t,
        `/api/backups/repositories/${created.repository.id}/snapshots/${snap}/files?path=${encodeURIComponent(src)}`,
      )
    ).json()
    expect(files.items.map((f: { name: string }) => f.name)).toEqual(['sub', 'a.txt'])

    // The database is in, through the online backup: the staging copy's path holds hostd.sqlite.
    const dataDir = snaps[0].paths.find((p: string) => p.includes('hostd-test-'))
    const staging = join(dataDir, 'backups', 'staging', id)
    const inStaging = (
      await get(
        h.t,
        `/api/backups/repositories/${created.repository.id}/snapshots/${snap}/files?path=${encodeURIComponent(staging)}`,
      )
    ).json()
    expect(inStaging.items.map((f: { name: string }) => f.name)).toContain('hostd.sqlite')

    // Restore to another place: under the file root, each path under its original absolute path.
    const other = await post(h.t, `/api/backups/repositories/${created.repository.id}/snapshots/${snap}/restore`, {
      paths: [join(src, 'sub')],
      target: { root: 'files', path: 'restored' },
    })
    expect(other.statusCode, other.body).toBe(200)
    expect(await readFile(join(h.root, 'restored', src, 'sub', 'b.txt'), 'utf8')).toBe('beta\n')
    expect(await stat(join(h.root, 'restored', src, 'a.txt')).catch(() => null)).toBeNull()

    // Out of the root: refused.
    const outside = await post(h.t, `/api/backups/repositories/${created.repository.id}/snapshots/${snap}/restore`, {
      paths: [src],
      target: { root: 'files', path: '../x' },
    })
    expect(outside.statusCode).toBe(400)
    expect(outside.json().error).toBe('HOSTD_BACKUPS_PATH_REFUSED')

    // To its place.
    await rm(join(src, 'a.txt'))
    const back = await post(h.t, `/api/backups/repositories/${created.repository.id}/snapshots/${snap}/restore`, {
      paths: [join(src, 'a.txt')],
      target: 'original',
    })
    expect(back.statusCode, back.body).toBe(200)
    expect(await readFile(join(src, 'a.txt'), 'utf8')).toBe('alpha\n')
  })
})

describe('backups: schedule and retention', () => {
  let h: Harness
  let work: string
  beforeAll(async () => {
    h = await backupsKernel()
    work = await mkdtemp(join(tmpdir(), 'hostd-backups-keep-'))
  })
  afterAll(async () => {
    await h?.t.close()
    await rm(work, { recursive: true, force: true })
    await rm(h.root, { recursive: true, force: true })
  })

  it("defaults to Umbrel's retention and an hourly run; forget --prune keeps what the job says", async () => {
    const repo = await repository(h.t, 'keep', { kind: 'local', path: join(work, 'repo') })
    const made = await post(h.t, '/api/backups/jobs', { name: 'hourly', repositoryId: repo.repository.id })
    expect(made.statusCode, made.body).toBe(201)
    const view = made.json()
    expect(view.retention).toEqual({ last: 10, hourly: 24, daily: 7, weekly: 4, monthly: 12 })
    expect(view.intervalMinutes).toBe(60)
    expect(new Date(view.nextRun).getTime() - new Date(view.createdAt).getTime()).toBe(60 * 60_000)
    expect(view.checkEveryDays).toBe(7)

    const id = await job(h.t, {
      name: 'keep-one',
      repositoryId: repo.repository.id,
      retention: { last: 1, hourly: 0, daily: 0, weekly: 0, monthly: 0 },
      checkEveryDays: 1,
    })
    const first = (await runJob(h.t, id)).json()
    expect(first.notes).toContain('check of 5% of the data: no errors')
    const second = (await runJob(h.t, id)).json()
    expect(second).toMatchObject({ status: 'success' })
    expect(second.notes).toContain('retention removed 1 snapshot')
    // The check runs once a day: not again.
    expect(second.notes.some((n: string) => n.startsWith('check'))).toBe(false)
    const snaps = (await get(h.t, `/api/backups/repositories/${repo.repository.id}/snapshots`)).json().items
    expect(snaps.map((s: { shortId: string }) => s.shortId)).toEqual([second.snapshotId])
    // A repository a job writes to cannot be forgotten.
    const busy = await post(h.t, `/api/backups/repositories/${repo.repository.id}/delete`)
    expect(busy.json()).toMatchObject({ error: 'HOSTD_BACKUPS_IN_USE' })
  })
})

describe('backups: the scheduler', () => {
  let h: Harness
  let work: string
  let offset = 0
  beforeAll(async () => {
    // The scheduler's clock only: moved forward past a job's next run, the timer fires (at least a second later).
    h = await backupsKernel({ now: () => Date.now() + offset })
    work = await mkdtemp(join(tmpdir(), 'hostd-backups-sched-'))
  })
  afterAll(async () => {
    await h?.t.close()
    await rm(work, { recursive: true, force: true })
    await rm(h.root, { recursive: true, force: true })
  })

  it('runs a job when its next run comes, as the scheduler', async () => {
    const repo = await repository(h.t, 'sched', { kind: 'local', path: join(work, 'repo') })
    const id = await job(h.t, { name: 'every-5', repositoryId: repo.repository.id, intervalMinutes: 5 })
    expect((await get(h.t, `/api/backups/jobs/${id}`)).json().lastResult).toBeNull()
    offset = 6 * 60_000
    // Any change to the jobs sets the timer again: an update with nothing changed.
    await post(h.t, `/api/backups/jobs/${id}/update`, {})
    const result = await eventually(async () => (await get(h.t, `/api/backups/jobs/${id}`)).json().lastResult)
    expect(result).toMatchObject({ status: 'success' })
    const audit = (await get(h.t, '/api/audit?range=all&limit=50')).json().items as {
      action: string
      username: string
    }[]
    expect(audit.find((a) => a.action === 'backups.run')).toMatchObject({ username: 'backups-scheduler' })
  })
})
