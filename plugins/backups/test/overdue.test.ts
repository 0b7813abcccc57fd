/**
 * "No backup for 24 h" (Umbrel's alert): this plugin's `backups.status` service gives each job's last success, and
 * the alerts plugin's `backupOverdue` rule fires when a scheduled job has had none for `threshold` hours (24 by
 * default) and resolves when a run succeeds. Both plugins run on one clock the test moves (no sleeping); the runs are
 * real restic backups to a local repository.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '@hostd/sdk/testing'
import { createAlertsPlugin } from '../../alerts/src/index.ts'
import type { AlertService } from '../../alerts/src/service.ts'
import { backupsKernel, get, job, post, repository, runJob, type Harness } from './helpers.ts'

const HOUR = 3_600_000

describe('the backupOverdue alert', () => {
  let h: Harness
  let work: string
  let clock = Date.now()
  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'hostd-backups-overdue-'))
    const now = () => clock
    h = await backupsKernel({
      now,
      plugins: [createAlertsPlugin({ smartIntervalMs: 0, systemIntervalMs: 0, attachIntervalMs: 60_000, now })],
    })
  })
  afterAll(async () => {
    await h?.t.close()
    await rm(h?.root ?? '', { recursive: true, force: true })
    await rm(work, { recursive: true, force: true })
  })

  const alerts = async () =>
    ((await get(h.t, '/api/alerts')).json().items as { target: string; state: string; summary: string }[]).filter(
      (a) => a.state === 'firing',
    )
  const check = () => {
    const d = h.t.kernel.registry.find('alerts')!.definition!
    return (h.t.kernel.registry.stateOf(d) as AlertService).checkSystem()
  }

  it('fires after threshold hours without a success of a scheduled job, and resolves when one succeeds', async () => {
    const repo = await repository(h.t, 'usb', { kind: 'local', path: join(work, 'repo') })
    // Weekly, so the scheduler does not run it when the clock moves a day or two.
    const weekly = await job(h.t, { name: 'weekly', repositoryId: repo.repository.id, intervalMinutes: 7 * 24 * 60 })
    await job(h.t, { name: 'by-hand', repositoryId: repo.repository.id })
    clock = Date.now()
    const byDefault = await post(h.t, '/api/alerts/rules', { name: 'x', source: 'backup', condition: 'backupOverdue' })
    expect(byDefault.json()).toMatchObject({ threshold: 24 })
    await h.t.inject({ method: 'DELETE', url: `/api/alerts/rules/${byDefault.json().id}`, as: 'admin' })
    const rule = await post(h.t, '/api/alerts/rules', {
      name: 'No backup',
      source: 'backup',
      condition: 'backupOverdue',
      threshold: 48,
    })
    expect(rule.statusCode, rule.body).toBe(201)

    clock += 25 * HOUR
    await check()
    expect(await alerts()).toEqual([])
    clock += 24 * HOUR
    await check()
    // The job never succeeded: counted from its creation; the job run only by hand is not watched.
    const firing = await alerts()
    expect(firing).toMatchObject([{ target: 'weekly' }])
    expect(firing[0]!.summary).toBe('Backup job weekly has had no successful run for 49 h (never succeeded)')

    // A successful run resolves it (the run's audit record makes the alerts plugin look again at once).
    expect((await runJob(h.t, weekly)).json()).toMatchObject({ status: 'success' })
    await eventually(async () => (await alerts()).length === 0)
    clock += 49 * HOUR
    await check()
    expect((await alerts())[0]!.summary).toMatch(
      /^Backup job weekly has had no successful run for 49 h \(last success /,
    )
  })
})
