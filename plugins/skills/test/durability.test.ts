import { spawn, type ChildProcess } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { startTestKernel } from '@hostd/sdk/testing'
import { createSkillsPlugin } from '../src/index.ts'
import { b64, blobRefs, listFiles, skillMd } from './helpers.ts'

const sha = (data: Buffer | string) => createHash('sha256').update(data).digest('hex')
const cleanup: string[] = []
afterAll(async () => {
  for (const dir of cleanup) await rm(dir, { recursive: true, force: true })
})
async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  cleanup.push(dir)
  return dir
}

describe('skills: atomic publish and persistence', () => {
  it('a publish that fails between its blob writes and its commit leaves the previous revision and no orphan blobs', async () => {
    let fail = false
    const t = await startTestKernel({
      overNetwork: true,
      plugins: [
        createSkillsPlugin({
          hooks: {
            beforeCommit: () => {
              if (fail) throw new Error('injected failure between blob writes and commit')
            },
          },
        }),
      ],
    })
    try {
      const made = await t.inject({
        method: 'POST',
        url: '/api/skills',
        as: 'admin',
        payload: {
          name: 'Stable',
          body: skillMd({ description: 'v1' }),
          files: [{ path: 'a.txt', content: b64('one') }],
        },
      })
      const id = made.json().skill.id
      const before = (await t.inject({ url: `/api/skills/${id}`, as: 'admin' })).json()
      fail = true
      const newContent = randomBytes(100_000)
      const put = await t.inject({
        method: 'PUT',
        url: `/api/skills/${id}`,
        as: 'admin',
        payload: {
          name: 'Stable',
          body: skillMd({ description: 'v2' }),
          baseRevision: 1,
          files: [{ path: 'b.bin', content: b64(newContent) }],
        },
      })
      expect(put.statusCode).toBe(500)
      const created = await t.inject({
        method: 'POST',
        url: '/api/skills',
        as: 'admin',
        payload: {
          name: 'Never',
          body: skillMd({ description: 'never' }),
          files: [{ path: 'n.bin', content: b64(randomBytes(5000)) }],
        },
      })
      expect(created.statusCode).toBe(500)
      fail = false

      expect((await t.inject({ url: `/api/skills/${id}`, as: 'admin' })).json()).toEqual(before)
      expect((await t.inject({ url: `/api/skills/${id}/revisions`, as: 'admin' })).json()).toHaveLength(1)
      expect((await t.inject({ url: '/api/skills', as: 'admin' })).json().map((s: { name: string }) => s.name)).toEqual(
        ['Stable'],
      )
      const { onDisk, referenced } = await blobRefs(t)
      expect(onDisk).toEqual(referenced)
      expect(onDisk).not.toContain(sha(newContent))
      expect(await listFiles(join(t.kernel.config.dataDir, 'skills', 'tmp'))).toEqual([])
      // And the next publish works.
      const ok = await t.inject({
        method: 'PUT',
        url: `/api/skills/${id}`,
        as: 'admin',
        payload: {
          name: 'Stable',
          body: skillMd({ description: 'v2' }),
          baseRevision: 1,
          files: [{ path: 'b.bin', content: b64(newContent) }],
        },
      })
      expect(ok.json().skill.revision).toBe(2)
    } finally {
      await t.close()
    }
  })

  it('keeps skills, revisions, files, flags and drafts across a restart on the same data dir, and collects orphans at start', async () => {
    const dataDir = await tempDir('skills-restart-')
    const a = await startTestKernel({
      overNetwork: true,
      plugins: [createSkillsPlugin()],
      env: { HOSTD_DATA_DIR: dataDir },
    })
    expect(a.kernel.config.dataDir).toBe(dataDir)
    const alice = await a.login('admin', 'alice')
    const id = (
      await a.inject({
        method: 'POST',
        url: '/api/skills',
        as: { token: alice.token },
        payload: {
          name: 'Persistent',
          body: skillMd({ description: 'v1', tags: ['keep'] }),
          files: [{ path: 'x/y.txt', content: b64('Y1') }],
        },
      })
    ).json().skill.id
    await a.inject({
      method: 'PUT',
      url: `/api/skills/${id}`,
      as: { token: alice.token },
      payload: {
        name: 'Persistent',
        body: skillMd({ description: 'v2', tags: ['keep'] }),
        baseRevision: 1,
        files: [{ path: 'x/y.txt', content: b64('Y2') }],
      },
    })
    await a.inject({
      method: 'POST',
      url: `/api/skills/${id}/enabled`,
      as: { token: alice.token },
      payload: { enabled: false },
    })
    const draftId = '0b5c8a9e-3f41-4e7a-9c1d-2a6b7c8d9e0f'
    await a.inject({
      method: 'POST',
      url: '/api/skills/drafts',
      as: { token: alice.token },
      payload: { draftId, name: 'Drafty', body: skillMd({ description: 'd' }) },
    })
    await a.inject({
      method: 'PUT',
      url: `/api/skills/drafts/${draftId}/files`,
      as: { token: alice.token },
      payload: { path: 'staged.txt', content: b64('S') },
    })
    const detailA = (await a.inject({ url: `/api/skills/${id}`, as: { token: alice.token } })).json()
    const revisionsA = (await a.inject({ url: `/api/skills/${id}/revisions`, as: { token: alice.token } })).json()
    await a.close()

    // What a crash would leave: a blob no row names, and a half-written temp file.
    const orphan = Buffer.from('orphan from an interrupted publish')
    await mkdir(join(dataDir, 'skills', 'blobs', sha(orphan).slice(0, 2)), { recursive: true })
    await writeFile(join(dataDir, 'skills', 'blobs', sha(orphan).slice(0, 2), sha(orphan)), orphan)
    await writeFile(join(dataDir, 'skills', 'tmp', 'half-written.1234'), 'partial')

    const b = await startTestKernel({
      overNetwork: true,
      plugins: [createSkillsPlugin()],
      env: { HOSTD_DATA_DIR: dataDir },
    })
    try {
      const token = b.kernel.services.sessions.create(alice.userId, '127.0.0.1')
      expect((await b.inject({ url: `/api/skills/${id}`, as: { token } })).json()).toEqual(detailA)
      expect(detailA.skill).toMatchObject({ revision: 2, enabled: false, description: 'v2' })
      expect((await b.inject({ url: `/api/skills/${id}/revisions`, as: { token } })).json()).toEqual(revisionsA)
      expect((await b.inject({ url: `/api/skills/${id}/file?path=x/y.txt&revision=1`, as: { token } })).body).toBe('Y1')
      expect((await b.inject({ url: `/api/skills/${id}/file?path=x/y.txt`, as: { token } })).body).toBe('Y2')
      expect((await b.inject({ url: `/api/skills/drafts/${draftId}`, as: { token } })).json().files).toEqual([
        'staged.txt',
      ])
      const { onDisk, referenced } = await blobRefs(b)
      expect(onDisk).toEqual(referenced)
      expect(onDisk).not.toContain(sha(orphan))
      expect(await readdir(join(dataDir, 'skills', 'tmp'))).toEqual([])
    } finally {
      await b.close()
    }
  })

  it('sweeps drafts that expired while the daemon was down', async () => {
    const dataDir = await tempDir('skills-sweep-')
    let now = Date.UTC(2031, 5, 1)
    const a = await startTestKernel({
      overNetwork: true,
      plugins: [createSkillsPlugin({ hooks: { now: () => now } })],
      env: { HOSTD_DATA_DIR: dataDir },
    })
    await a.inject({
      method: 'POST',
      url: '/api/skills/drafts',
      as: 'admin',
      payload: {
        draftId: '1b5c8a9e-3f41-4e7a-9c1d-2a6b7c8d9e0f',
        name: 'Expiring',
        body: skillMd({ description: 'd' }),
      },
    })
    await a.inject({
      method: 'PUT',
      url: '/api/skills/drafts/1b5c8a9e-3f41-4e7a-9c1d-2a6b7c8d9e0f/files',
      as: 'admin',
      payload: { path: 'big.bin', content: b64(randomBytes(10_000)) },
    })
    await a.close()
    now += 25 * 3600_000
    const b = await startTestKernel({
      overNetwork: true,
      plugins: [createSkillsPlugin({ hooks: { now: () => now } })],
      env: { HOSTD_DATA_DIR: dataDir },
    })
    try {
      expect(b.kernel.db.native.prepare('select count(*) as n from skills_drafts').get()).toEqual({ n: 0 })
      expect((await blobRefs(b)).onDisk).toEqual([])
    } finally {
      await b.close()
    }
  })
})

interface Child {
  url: string
  token: string
  harnessDir: string
  process: ChildProcess
  exited: Promise<unknown>
}

const DAEMON = join(import.meta.dirname, 'support', 'daemon.ts')

async function startChild(dataDir: string, env: Record<string, string> = {}): Promise<Child> {
  const childEnv: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith('HOSTD_') && !k.startsWith('VITEST') && k !== 'NODE_OPTIONS') childEnv[k] = v
  const child = spawn(process.execPath, [DAEMON], {
    env: { ...childEnv, SKILLS_DATA_DIR: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  let out = ''
  let err = ''
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d))
  const line = await new Promise<string>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d
      if (out.includes('\n')) resolve(out.split('\n')[0]!)
    })
    void exited.then(() => reject(new Error(`daemon exited before serving: ${err}`)))
  })
  const info = JSON.parse(line) as { url: string; token: string; harnessDir: string }
  cleanup.push(info.harnessDir)
  return { ...info, process: child, exited }
}

async function call(child: Child, path: string, init: { method?: string; body?: unknown } = {}) {
  const res = await fetch(new URL(path, child.url), {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${child.token}`, ...(init.body ? { 'content-type': 'application/json' } : {}) },
    body: init.body ? JSON.stringify(init.body) : undefined,
  })
  return { status: res.status, json: () => res.json() as Promise<any>, text: () => res.text() }
}

describe('skills: kill -9 of the daemon during a large publish', () => {
  it('leaves the skill readable at its previous revision, and the next start collects the orphan blobs', async () => {
    const dataDir = await tempDir('skills-kill-')
    const marker = join(dataDir, 'paused-before-commit')
    const a = await startChild(dataDir, { SKILLS_PAUSE_MARKER: marker })
    const made = await call(a, '/api/skills', {
      method: 'POST',
      body: {
        name: 'Survivor',
        body: skillMd({ description: 'before the crash' }),
        files: [{ path: 'data/keep.txt', content: b64('kept') }],
      },
    })
    expect(made.status).toBe(201)
    const id = (await made.json()).skill.id
    const before = await (await call(a, `/api/skills/${id}`)).json()

    // A large replace (48 MiB over four files): the daemon writes every blob, then pauses before its commit.
    const big = Array.from({ length: 4 }, () => randomBytes(12 * 1024 * 1024))
    const publishing = call(a, `/api/skills/${id}`, {
      method: 'PUT',
      body: {
        name: 'Survivor',
        body: skillMd({ description: 'after the crash' }),
        baseRevision: 1,
        files: big.map((data, i) => ({ path: `big/${i}.bin`, content: b64(data) })),
      },
    }).then(
      () => 'answered',
      () => 'connection lost',
    )
    for (let i = 0; i < 600 && !existsSync(marker); i++) await new Promise((r) => setTimeout(r, 100))
    expect(existsSync(marker)).toBe(true)
    const blobsAtCrash = (await listFiles(join(dataDir, 'skills', 'blobs'))).map((p) => p.split('/')[1]!.split(':')[0])
    for (const data of big) expect(blobsAtCrash).toContain(sha(data))

    a.process.kill('SIGKILL')
    await a.exited
    expect(await publishing).toBe('connection lost')

    const b = await startChild(dataDir)
    try {
      expect(await (await call(b, `/api/skills/${id}`)).json()).toEqual(before)
      expect(await (await call(b, `/api/skills/${id}/revisions`)).json()).toHaveLength(1)
      expect(await (await call(b, `/api/skills/${id}/file?path=data/keep.txt`)).text()).toBe('kept')
      const blobsNow = (await listFiles(join(dataDir, 'skills', 'blobs'))).map((p) => p.split('/')[1]!.split(':')[0])
      for (const data of big) expect(blobsNow).not.toContain(sha(data))
      expect(blobsNow).toHaveLength(2)
      expect(await readdir(join(dataDir, 'skills', 'tmp'))).toEqual([])
      // The skill takes the publish again as revision 2.
      const retry = await call(b, `/api/skills/${id}`, {
        method: 'PUT',
        body: {
          name: 'Survivor',
          body: skillMd({ description: 'after the crash' }),
          baseRevision: 1,
          files: [{ path: 'small.txt', content: b64('s') }],
        },
      })
      expect((await retry.json()).skill.revision).toBe(2)
    } finally {
      b.process.kill('SIGTERM')
      await b.exited
    }
  }, 120_000)

  it('without any seam, a kill -9 while the blobs are being written leaves one whole revision and no orphans', async () => {
    const dataDir = await tempDir('skills-kill-free-')
    const a = await startChild(dataDir)
    const made = await call(a, '/api/skills', {
      method: 'POST',
      body: {
        name: 'Anytime',
        body: skillMd({ description: 'one' }),
        files: [{ path: 'keep.txt', content: b64('kept') }],
      },
    })
    const id = (await made.json()).skill.id
    const before = await (await call(a, `/api/skills/${id}`)).json()
    const blobsBefore = (await listFiles(join(dataDir, 'skills', 'blobs'))).length
    const big = Array.from({ length: 4 }, () => randomBytes(12 * 1024 * 1024))
    const publishing = call(a, `/api/skills/${id}`, {
      method: 'PUT',
      body: {
        name: 'Anytime',
        body: skillMd({ description: 'two' }),
        baseRevision: 1,
        files: big.map((data, i) => ({ path: `big/${i}.bin`, content: b64(data) })),
      },
    }).then(
      () => 'answered',
      () => 'connection lost',
    )
    // Kill as soon as the first new blob (or its temp file) shows up: the publish is then midway.
    const tmpDir = join(dataDir, 'skills', 'tmp')
    for (let i = 0; i < 6000; i++) {
      const blobsNow = (await listFiles(join(dataDir, 'skills', 'blobs'))).length
      if (blobsNow > blobsBefore || (await readdir(tmpDir).catch(() => [])).length > 0) break
      await new Promise((r) => setTimeout(r, 5))
    }
    a.process.kill('SIGKILL')
    await a.exited
    await publishing

    const b = await startChild(dataDir)
    try {
      const after = await (await call(b, `/api/skills/${id}`)).json()
      if (after.skill.revision === 1) {
        expect(after).toEqual(before)
      } else {
        // The commit won the race: then the new revision is whole.
        expect(after.skill.revision).toBe(2)
        for (let i = 0; i < big.length; i++) {
          const res = await fetch(new URL(`/api/skills/${id}/file?path=big/${i}.bin`, b.url), {
            headers: { authorization: `Bearer ${b.token}` },
          })
          expect(Buffer.from(await res.arrayBuffer()).equals(big[i]!)).toBe(true)
        }
      }
      const revisions = await (await call(b, `/api/skills/${id}/revisions`)).json()
      expect(revisions).toHaveLength(after.skill.revision)
      const onDisk = (await listFiles(join(dataDir, 'skills', 'blobs'))).map((p) => p.split('/')[1]!.split(':')[0])
      expect(onDisk).toHaveLength(after.skill.revision === 1 ? 2 : 2 + 1 + big.length)
      expect(await readdir(tmpDir)).toEqual([])
    } finally {
      b.process.kill('SIGTERM')
      await b.exited
    }
  }, 120_000)
})
