/**
 * Installs survive a crash at any point: the real daemon is killed (SIGKILL, by itself) at each step of an install or
 * upgrade through the test-only fault point HOSTD_TEST_INSTALL_CRASH_AT (kernel/src/plugins/install.ts lists the
 * steps), then started again on the same data dir: it shows the old version or the new one, never none, and no
 * staging folder is left. Killing the process at the named step, rather than building each state on disk by hand,
 * tests the states the real sequence leaves, not the ones we think it leaves. On main a kill between the two renames
 * left no plugin at all (the old version stranded in `.staging-*`), and staging folders piled up.
 *
 * Also here: a symbolic link to a plugin folder is loaded at start as on hot load, and a change to any of its files
 * (not only the entry) reloads it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { create as createTar } from 'tar'
import { eventually } from '@hostd/sdk/testing'
import { REPO_ROOT, startDaemon, type Daemon } from '../support/daemon.ts'

const HELLO_DIR = join(REPO_ROOT, 'examples', 'hello-plugin')
const ADMIN = 'admin'
const PASSWORD = 'correct horse battery'

type Json = Record<string, any>

/** The hello example as version `version`, whose /api/hello says so; packed as `npm pack` would. */
async function packHello(scratch: string, version: string): Promise<Buffer> {
  const dir = join(scratch, `hello-${version}`)
  await cp(HELLO_DIR, dir, {
    recursive: true,
    filter: (src) => !src.includes('node_modules') && !src.endsWith('/test'),
  })
  const pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'))
  await writeFile(join(dir, 'package.json'), JSON.stringify({ ...pkg, version }))
  const source = await readFile(join(dir, 'src', 'index.ts'), 'utf8')
  await writeFile(
    join(dir, 'src', 'index.ts'),
    source.replace("version: '1.0.0'", `version: '${version}'`).replace('`Hello, ', `\`${version}: Hello, `),
  )
  const file = join(scratch, `hello-${version}.tgz`)
  await createTar({ gzip: true, cwd: dir, prefix: 'package', file, portable: true }, ['package.json', 'src', 'ui'])
  return readFile(file)
}

describe('an install or upgrade killed at each step', () => {
  let scratch: string
  let dataDir: string
  let pluginsDir: string
  let admin: string
  const archives: Record<string, Buffer> = {}

  const bearer = () => ({ authorization: `Bearer ${admin}` })
  const start = (crashAt?: string) =>
    startDaemon({ dataDir, env: crashAt ? { HOSTD_TEST_INSTALL_CRASH_AT: crashAt } : {} })

  /** Sends the install; the daemon kills itself at `crashAt`, so the request gets no answer. */
  const installAndCrash = async (version: string, crashAt: string) => {
    const d = await start(crashAt)
    try {
      const answer = await d
        .fetch('/api/extensions/install', {
          method: 'POST',
          headers: { ...bearer(), 'content-type': 'application/gzip' },
          body: archives[version],
        })
        .then(
          (res) => `answered ${res.status}`,
          () => 'no answer',
        )
      expect(answer).toBe('no answer')
      expect(await d.exited).toBe('SIGKILL')
    } finally {
      await d.stop({ keepDataDir: true })
    }
  }

  /** Starts the daemon again (no fault point) and says which version of hello it shows, after checking it serves it. */
  const restartAndLook = async (): Promise<string | null> => {
    const d = await start()
    try {
      const staging = (await readdir(pluginsDir)).filter((name) => name.startsWith('.'))
      expect(staging, 'staging folders left after the start').toEqual([])
      const folders = (await readdir(pluginsDir)).filter((name) => !name.startsWith('.'))
      expect(folders.every((name) => name === 'hello')).toBe(true)
      if (folders.length === 0) return null
      // Plugins load once the daemon listens: wait for hello's load to end.
      const hello = await eventually(async () => {
        const res = await d.fetch('/api/extensions', { headers: bearer() })
        const entry = res.status === 200 ? ((await res.json()) as Json[]).find((e) => e.id === 'hello') : undefined
        return entry && entry.state !== 'starting' && entry
      })
      expect(hello.state, JSON.stringify(hello)).toBe('active')
      const onDisk = JSON.parse(await readFile(join(pluginsDir, 'hello', 'package.json'), 'utf8')).version
      expect(hello.version).toBe(onDisk)
      const res = await d.fetch('/api/hello', { headers: bearer() })
      expect(res.status).toBe(200)
      expect(((await res.json()) as Json).message).toMatch(new RegExp(`^(${hello.version}: )?Hello, ${ADMIN}!$`))
      return hello.version as string
    } finally {
      expect(await d.stop({ keepDataDir: true })).toBe(0)
    }
  }

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'hostd-install-crash-'))
    for (const version of ['1.0.0', '2.0.0']) archives[version] = await packHello(scratch, version)
    dataDir = join(scratch, 'data')
    pluginsDir = join(dataDir, 'plugins')
    const d = await start()
    try {
      const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
        d.fetch(path, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify(body),
        })
      expect((await post('/api/setup', { username: ADMIN, password: PASSWORD })).status).toBe(201)
      const login = await post('/api/auth/login', { username: ADMIN, password: PASSWORD }, { 'x-svc-client': 'crash' })
      admin = ((await login.json()) as Json).token
    } finally {
      await d.stop({ keepDataDir: true })
    }
  })
  afterAll(() => rm(scratch, { recursive: true, force: true }))

  // A first install: before its commit point nothing is installed, after it the new version is.
  it('a first install killed once unpacked (before its intent): none, as before it', async () => {
    await installAndCrash('1.0.0', 'unpacked')
    expect(await restartAndLook()).toBeNull()
  })

  it('a first install killed once its intent is written: the new version', async () => {
    await installAndCrash('1.0.0', 'intent')
    expect(await restartAndLook()).toBe('1.0.0')
  })

  // Upgrades from 1.0.0 to 2.0.0 (and back): the old version until the commit point, the new one after.
  const upgrades: [step: string, from: string, to: string, shows: string][] = [
    ['unpacked', '1.0.0', '2.0.0', '1.0.0'],
    ['intent', '1.0.0', '2.0.0', '2.0.0'],
    ['previous-aside', '2.0.0', '1.0.0', '1.0.0'], // on main: no plugin at all
    ['next-in-place', '1.0.0', '2.0.0', '2.0.0'],
    ['cleaning', '2.0.0', '1.0.0', '1.0.0'],
  ]
  for (const [step, from, to, shows] of upgrades) {
    it(`an upgrade ${from} -> ${to} killed at "${step}": ${shows === from ? 'the old' : 'the new'} version`, async () => {
      await installAndCrash(to, step)
      expect(await restartAndLook()).toBe(shows)
    })
  }

  it('a start killed while it finishes an interrupted upgrade: the next start finishes it', async () => {
    await installAndCrash('2.0.0', 'intent')
    // The start that finds the staging folder dies itself between its two renames.
    await expect(start('previous-aside')).rejects.toThrow(/exited \(SIGKILL\) before serving/)
    expect((await readdir(pluginsDir)).includes('hello')).toBe(false)
    expect(await restartAndLook()).toBe('2.0.0')
  })

  it('each recovery is audited', async () => {
    const d = await start()
    try {
      const res = await d.fetch('/api/audit?range=all&limit=1000', { headers: bearer() })
      const records = ((await res.json()) as Json).items as Json[]
      const recovered = records.filter((e) => e.action === 'plugin.install.recover').map((e) => e.detail.outcome)
      // Discarded: the two killed before their intent, and the one killed while cleaning up (its intent gone first).
      expect(recovered.sort()).toEqual([...Array(3).fill('discarded'), ...Array(5).fill('finished')])
    } finally {
      await d.stop({ keepDataDir: true })
    }
  })
})

// Isolated (a sandboxed process per load) and in the daemon's process (where modules are cached per URL).
describe.each<{ mode: string; env: Record<string, string> }>([
  { mode: 'isolated', env: {} },
  { mode: 'in process', env: { HOSTD_PLUGINS_ISOLATION: 'off' } },
])('a plugin folder that is a symbolic link ($mode)', ({ env }) => {
  let scratch: string
  let d: Daemon
  let admin: string
  const bearer = () => ({ authorization: `Bearer ${admin}` })
  const hello = async () => {
    const res = await d.fetch('/api/hello', { headers: bearer() })
    return res.status === 200 ? ((await res.json()) as Json).message : `status ${res.status}`
  }

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'hostd-symlink-plugin-'))
    // The working copy lives outside the plugins dir; the plugin's message comes from a file other than its entry.
    const copy = join(scratch, 'working-copy')
    await cp(HELLO_DIR, copy, { recursive: true, filter: (src) => !src.includes('node_modules') })
    const entry = join(copy, 'src', 'index.ts')
    const source = await readFile(entry, 'utf8')
    await writeFile(
      entry,
      `import { greeting } from './greeting.ts'\n${source.replace(/`Hello, \$\{req\.user!\.username\}!`/, 'greeting(req.user!.username)')}`,
    )
    await writeFile(
      join(copy, 'src', 'greeting.ts'),
      "export const greeting = (name: string) => 'Hello, ' + name + '!'\n",
    )
    const dataDir = join(scratch, 'data')
    await mkdir(join(dataDir, 'plugins'), { recursive: true })
    await symlink(copy, join(dataDir, 'plugins', 'hello'))
    d = await startDaemon({ dataDir, env })
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      d.fetch(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      })
    expect((await post('/api/setup', { username: ADMIN, password: PASSWORD })).status).toBe(201)
    const login = await post('/api/auth/login', { username: ADMIN, password: PASSWORD }, { 'x-svc-client': 'link' })
    admin = ((await login.json()) as Json).token
  })
  afterAll(async () => {
    await d?.stop()
    await rm(scratch, { recursive: true, force: true })
  })

  it('is loaded at start (on main it was skipped: only the hot load followed links)', async () => {
    expect(await eventually(async () => (await hello()) === `Hello, ${ADMIN}!`)).toBe(true)
  })

  it('a change to a file other than its entry reloads it (on main only the entry was imported again)', async () => {
    expect(await eventually(async () => (await hello()) === `Hello, ${ADMIN}!`)).toBe(true)
    await writeFile(
      join(scratch, 'working-copy', 'src', 'greeting.ts'),
      "export const greeting = (name: string) => 'Good day, ' + name + '!'\n",
    )
    expect(await eventually(async () => (await hello()) === `Good day, ${ADMIN}!`)).toBe(true)
  })

  it('removing it through the API removes the link, never the folder it points to', async () => {
    const res = await d.fetch('/api/extensions/hello/remove', { method: 'POST', headers: bearer() })
    expect(res.status).toBe(204)
    expect(await readdir(join(scratch, 'data', 'plugins'))).toEqual([])
    expect((await readdir(join(scratch, 'working-copy', 'src'))).sort()).toEqual(['greeting.ts', 'index.ts'])
  })
})
