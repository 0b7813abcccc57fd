/**
 * The end-to-end case with the real restic against each kind of repository: a local folder, SFTP to a real
 * sshd on loopback, and restic's REST protocol through `rclone serve restic`. A container's volume is backed up
 * (the container stopped for the copy and started again), the container and its volume are removed, both are
 * restored, and the container runs with its data.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import containers from '../../containers/src/index.ts'
import { importTestImage, startEngine, type TestEngine } from '../../containers/test/support/engine.ts'
import { backupsKernel, get, job, post, repository, runJob, type Harness } from './helpers.ts'
import { startRestServer, startSshd, type Server } from './support/servers.ts'

/** Runs until stopped, and stops at once on SIGTERM (a bare `sleep` as PID 1 would wait out docker's 10 s). */
const STAYS_UP = 'trap "exit 0" TERM; while true; do sleep 0.2; done'

describe('backups end to end: a container restored from each kind of repository', () => {
  let engine: TestEngine
  let h: Harness
  let work: string
  let sshd: Server
  let rest: Server & { url: string }
  let image: string

  beforeAll(async () => {
    engine = await startEngine()
    image = await importTestImage(engine, 'hostd-test/backups:1')
    h = await backupsKernel({ plugins: [containers], env: { DOCKER_HOST: engine.host } })
    work = await mkdtemp(join(tmpdir(), 'hostd-backups-e2e-'))
    const key = (await get(h.t, '/api/backups/ssh-key')).json().publicKey
    expect(key).toMatch(/^ssh-ed25519 \S+ hostd-backups$/)
    sshd = await startSshd(key)
    rest = await startRestServer({ user: 'hostd', pass: 'rest secret' })
  }, 120_000)

  afterAll(async () => {
    await h?.t.close()
    await sshd?.stop()
    await rest?.stop()
    await engine?.stop()
    await rm(work, { recursive: true, force: true })
    await rm(h.root, { recursive: true, force: true })
  })

  const cases = [
    { kind: 'local', location: () => ({ kind: 'local', path: join(work, 'local-repo') }), extra: {} },
    {
      kind: 'sftp',
      location: () => ({
        kind: 'sftp',
        host: '127.0.0.1',
        port: sshd.port,
        user: 'root',
        path: join(sshd.dir, 'repo'),
      }),
      extra: {},
    },
    {
      kind: 'rest',
      location: () => ({ kind: 'rest', url: `${rest.url}hostd/`, username: 'hostd' }),
      extra: { restPassword: 'rest secret' },
    },
  ] as const

  for (const c of cases) {
    it(`${c.kind}: back up a volume, remove container and volume, restore both`, async () => {
      const name = `app-${c.kind}`
      const volume = `data-${c.kind}`
      await engine.docker('run', '-d', '--name', name, '-v', `${volume}:/data`, image, 'sh', '-c', STAYS_UP)
      await engine.docker('exec', name, 'sh', '-c', `echo "payload of ${c.kind}" > /data/payload`)

      const repo = await repository(h.t, `repo-${c.kind}`, c.location(), c.extra)
      // Credentials never answered back: not the REST password, not in the repository's name.
      expect(JSON.stringify(repo.repository)).not.toContain('rest secret')
      const id = await job(h.t, {
        name: `job-${c.kind}`,
        repositoryId: repo.repository.id,
        containers: [name],
        stopContainers: true,
      })
      const res = await runJob(h.t, id)
      expect(res.statusCode, res.body).toBe(200)
      expect(res.json().notes).toContain(`started again: ${name}`)
      expect(await engine.docker('inspect', '-f', '{{.State.Running}}', name)).toBe('true\n')

      const snaps = (await get(h.t, `/api/backups/repositories/${repo.repository.id}/snapshots`)).json().items
      expect(snaps[0].containers).toEqual([name])

      await engine.docker('rm', '-f', name)
      await engine.docker('volume', 'rm', volume)

      const restored = await post(
        h.t,
        `/api/backups/repositories/${repo.repository.id}/snapshots/${snaps[0].id}/restore-container`,
        { name },
      )
      expect(restored.statusCode, restored.body).toBe(200)
      expect(restored.json()).toMatchObject({ name, volumes: [volume], started: true })
      expect(await engine.docker('inspect', '-f', '{{.State.Running}}', name)).toBe('true\n')
      expect(await engine.docker('exec', name, 'cat', '/data/payload')).toBe(`payload of ${c.kind}\n`)

      // Restoring over a container that exists is refused, and changes nothing.
      const again = await post(
        h.t,
        `/api/backups/repositories/${repo.repository.id}/snapshots/${snaps[0].id}/restore-container`,
        { name },
      )
      expect(again.statusCode).toBe(409)
      expect(again.json().error).toBe('HOSTD_BACKUPS_EXISTS')
      await engine.docker('rm', '-f', name)
    })
  }
})
