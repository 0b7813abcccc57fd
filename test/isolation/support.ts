/**
 * A real daemon (its build, spawned: test/support/daemon.ts) for the isolation tests, with an admin signed in, plugin
 * folders dropped into its plugins folder, and the processes its plugins run in, read from /proc.
 */
import { cp, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventually } from '@hostd/sdk/testing'
import { REPO_ROOT, startDaemon, type Daemon } from '../support/daemon.ts'

export const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'hostile-plugins')
export const HELLO = join(REPO_ROOT, 'examples', 'hello-plugin')
const ADMIN = { username: 'admin', password: 'isolation test password' }

export interface Extension {
  id: string
  state: string
  reason?: string
  error?: string
  errorOrigin?: string
  [key: string]: unknown
}

export interface IsolationDaemon extends Daemon {
  adminToken: string
  /** A request with the admin's bearer token; the body as JSON (or text), and how long the answer took. */
  api(
    path: string,
    init?: { method?: string; body?: unknown; token?: string },
  ): Promise<{ status: number; body: any; ms: number }>
  /** Copies a plugin folder into the plugins folder (hot load) as `name`. */
  drop(folder: string, name: string): Promise<string>
  extension(id: string): Promise<Extension | undefined>
  /** Polls GET /api/extensions until the plugin's entry satisfies `test`. */
  until(id: string, test: (e: Extension) => boolean): Promise<Extension>
  /** Stops the daemon and removes its data dir. */
  close(): Promise<void>
}

/** Starts a daemon whose plugins folder holds `folders` (name -> source folder) before it starts. */
export async function startIsolationDaemon(
  folders: Record<string, string> = {},
  env: Record<string, string> = {},
): Promise<IsolationDaemon> {
  const dataDir = await mkdtemp(join(tmpdir(), 'hostd-isolation-'))
  await mkdir(join(dataDir, 'plugins'), { recursive: true })
  for (const [name, folder] of Object.entries(folders))
    await cp(folder, join(dataDir, 'plugins', name), { recursive: true })
  const daemon = await startDaemon({ dataDir, env: { HOSTD_LOG_LEVEL: 'warn', ...env } })
  const post = (path: string, headers: Record<string, string> = {}) =>
    daemon.fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(ADMIN),
    })
  const setup = await post('/api/setup')
  if (setup.status !== 201) throw new Error(`setup answered ${setup.status}: ${await setup.text()}`)
  const login = await post('/api/auth/login', { 'x-svc-client': 'isolation-test' })
  const { token: adminToken } = (await login.json()) as { token: string }

  const api: IsolationDaemon['api'] = async (path, init = {}) => {
    const started = performance.now()
    const res = await daemon.fetch(path, {
      method: init.method ?? 'GET',
      headers: {
        authorization: `Bearer ${init.token ?? adminToken}`,
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    })
    const text = await res.text()
    const ms = performance.now() - started
    let body: unknown = text
    try {
      body = text ? JSON.parse(text) : null
    } catch {
      // not JSON: the text as it is
    }
    return { status: res.status, body, ms }
  }
  const extension = async (id: string) => {
    const { body } = await api('/api/extensions')
    return (body as Extension[]).find((e) => e.id === id)
  }
  return Object.assign(daemon, {
    adminToken,
    api,
    extension,
    async drop(folder: string, name: string) {
      const target = join(daemon.pluginsDir, name)
      // Copied beside, then renamed in: the watcher never sees a half-copied folder.
      const staging = join(daemon.pluginsDir, `.copy-${name}`)
      await cp(folder, staging, { recursive: true })
      const { rename } = await import('node:fs/promises')
      await rename(staging, target)
      return target
    },
    until: (id: string, test: (e: Extension) => boolean) =>
      eventually(async () => {
        const e = await extension(id)
        return e && test(e) ? e : null
      }, 100),
    async close() {
      await daemon.stop({ keepDataDir: true })
      await rm(dataDir, { recursive: true, force: true })
    },
  })
}

/** One process as /proc shows it. */
export interface Proc {
  pid: number
  ppid: number
  /** Start time in clock ticks since boot: with the pid, it names one process even after its pid is reused. */
  start: string
  cmdline: string
}

async function readProc(pid: number): Promise<Proc | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    // The command name (field 2) is in parentheses and may hold spaces: the fields after the last ')' are fixed.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // A zombie has ended: only its exit status waits for its parent (or init, for an orphan) to collect it.
    if (fields[0] === 'Z' || fields[0] === 'X') return null
    const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).replaceAll('\0', ' ').trim()
    return { pid, ppid: Number(fields[1]), start: fields[19]!, cmdline }
  } catch {
    return null
  }
}

/** Every live process that descends from `root`. */
export async function descendants(root: number): Promise<Proc[]> {
  const all = (
    await Promise.all(
      (await readdir('/proc')).filter((name) => /^\d+$/.test(name)).map((name) => readProc(Number(name))),
    )
  ).filter((p): p is Proc => p !== null)
  const out: Proc[] = []
  const parents = new Set([root])
  let grew = true
  while (grew) {
    grew = false
    for (const p of all) {
      if (parents.has(p.ppid) && !parents.has(p.pid)) {
        parents.add(p.pid)
        out.push(p)
        grew = true
      }
    }
  }
  return out
}

/**
 * The processes a plugin of `daemon` runs in: the bwrap started for its folder (its arguments name the folder) and
 * everything under it (bwrap's init inside the sandbox, Node).
 */
export async function pluginProcesses(daemonPid: number, folder: string): Promise<Proc[]> {
  const tree = await descendants(daemonPid)
  const roots = tree.filter((p) => p.ppid === daemonPid && p.cmdline.includes(`${folder} /plugin`))
  const out: Proc[] = []
  for (const root of roots) out.push(root, ...(await descendants(root.pid)))
  return out
}

/** True once none of `procs` is alive (a pid now used by another process does not count). */
export async function allGone(procs: Proc[]): Promise<boolean> {
  for (const p of procs) {
    const now = await readProc(p.pid)
    if (now && now.start === p.start) return false
  }
  return true
}
