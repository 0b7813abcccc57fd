/**
 * An S3 repository through restic's s3 backend, against moto's S3 server (a STAND-IN: an emulator of AWS S3, see
 * support/servers.ts; no production S3 server runs here): created with its secret key sealed (never answered), a
 * folder backed up, the file removed, restored in place; a location without the secret key refused.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backupsKernel, get, job, post, repository, runJob, type Harness } from './helpers.ts'
import { startS3Server, type Server } from './support/servers.ts'

const SECRET = 'moto-secret-key-1234567890'

describe('backups to S3 (moto, a stand-in S3 server)', () => {
  let h: Harness
  let s3: Server & { endpoint: string }
  let work: string
  beforeAll(async () => {
    ;[h, s3, work] = await Promise.all([backupsKernel(), startS3Server(), mkdtemp(join(tmpdir(), 'hostd-backups-s3-'))])
  })
  afterAll(async () => {
    await h?.t.close()
    await s3?.stop()
    await rm(work, { recursive: true, force: true })
    await rm(h?.root ?? '', { recursive: true, force: true })
  })

  it('backs up to a bucket and restores from it, the secret key sealed', async () => {
    const location = {
      kind: 's3',
      endpoint: s3.endpoint,
      bucket: 'hostd-backups',
      path: 'box1',
      accessKeyId: 'AKIDHOSTD',
    }
    const missing = await post(h.t, '/api/backups/repositories', { name: 'cloud', location })
    expect([missing.statusCode, missing.json().error]).toEqual([400, 'HOSTD_BACKUPS_INVALID'])
    const made = await repository(h.t, 'cloud', location, { s3SecretAccessKey: SECRET })
    expect(made.repository.repository).toBe(`s3:${s3.endpoint}/hostd-backups/box1`)
    expect(JSON.stringify((await get(h.t, '/api/backups/repositories')).json())).not.toContain(SECRET)
    const stored = await h.t.kernel.db.native
      .prepare("select value from settings where scope = 'plugin.backups' and key = 'repositories'")
      .get()
    expect(JSON.stringify(stored)).toContain('AKIDHOSTD')
    expect(JSON.stringify(stored)).not.toContain(SECRET)

    const src = join(work, 'src')
    await mkdir(src)
    await writeFile(join(src, 'ledger.txt'), 'in the bucket\n')
    const id = await job(h.t, { name: 'cloud', repositoryId: made.repository.id, folders: [src] })
    expect((await runJob(h.t, id)).json()).toMatchObject({ status: 'success', error: null })
    const snaps = (await get(h.t, `/api/backups/repositories/${made.repository.id}/snapshots`)).json().items
    expect(snaps).toHaveLength(1)
    await rm(join(src, 'ledger.txt'))
    const restored = await post(
      h.t,
      `/api/backups/repositories/${made.repository.id}/snapshots/${snaps[0].id}/restore`,
      {
        paths: [join(src, 'ledger.txt')],
        target: 'original',
      },
    )
    expect(restored.statusCode, restored.body).toBe(200)
    expect(await readFile(join(src, 'ledger.txt'), 'utf8')).toBe('in the bucket\n')
  })
})
