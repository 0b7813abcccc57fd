/**
 * The operating-system sandbox a third-party plugin's process runs in: bubblewrap (`bwrap`, Debian's `bubblewrap`,
 * the sandbox Flatpak uses), with new user, mount, PID, network, IPC, UTS and cgroup namespaces. Inside, only these
 * are visible: the OS's /usr (libraries), the daemon's Node binary, the sdk, the plugin's folder (all read-only) and
 * the plugin's data folder (read-write), with a private /tmp, /proc and /dev. It runs as nobody (65534) with no
 * capabilities, cannot make further user namespaces, has only a loopback network, and its heap is capped.
 *
 * The channel to the kernel is a socketpair the process inherits as descriptor 3; nothing else of the daemon is
 * reachable. No shell: bwrap is started with an argument list.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, realpathSync, statSync, lstatSync } from 'node:fs'
import { delimiter, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SANDBOX_PATHS } from '../../../sdk/src/isolated/protocol.ts'

const REPO = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? '../../../' : '../../', import.meta.url))
const SDK_DIR = join(REPO, 'sdk')
/** The runner: its build (sdk/dist/isolated, by kernel/build.mjs) beside the sdk's, else its sources (types stripped). */
const RUNNER = {
  dist: `${SANDBOX_PATHS.sdk}/dist/isolated/runner.mjs`,
  src: `${SANDBOX_PATHS.sdk}/src/isolated/runner.ts`,
}
/** Packages the sdk imports when it runs from its sources (its build bundles them). */
const SDK_SOURCE_PACKAGES = ['@sinclair/typebox', '@mikro-orm/core', '@mikro-orm/sql', '@mikro-orm/sqlite', 'kysely']
/** The SQLite driver of a plugin's own database (sdk/src/isolated/database.ts): native code, bound in either flavour. */
const DATABASE_PACKAGES = ['better-sqlite3']
const NOBODY = '65534'

/** Where bwrap is, from PATH (the usual places first); null when it is not installed. */
export function findBwrap(path = process.env.PATH ?? ''): string | null {
  for (const dir of ['/usr/bin', '/bin', ...path.split(delimiter)]) {
    if (!dir) continue
    const candidate = join(dir, 'bwrap')
    try {
      if (statSync(candidate).isFile()) return candidate
    } catch {
      // not here
    }
  }
  return null
}

/**
 * Which copy of the sdk the plugin imports inside the sandbox: its build (one file, about 60 ms and 50 MiB less than
 * the sources, which load the ORM's and TypeBox's hundreds of modules) whenever it is at least as new as the sources.
 */
function sdkFlavour(): 'dist' | 'src' {
  const built = join(SDK_DIR, 'dist', 'index.mjs')
  if (!existsSync(built) || !existsSync(join(SDK_DIR, 'dist', 'isolated', 'runner.mjs'))) return 'src'
  const builtAt = statSync(built).mtimeMs
  const newest = (dir: string): number =>
    readdirSync(dir, { withFileTypes: true }).reduce((latest, entry) => {
      const full = join(dir, entry.name)
      if (entry.isDirectory()) return Math.max(latest, newest(full))
      return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')
        ? Math.max(latest, statSync(full).mtimeMs)
        : latest
    }, 0)
  return newest(join(SDK_DIR, 'src')) <= builtAt ? 'dist' : 'src'
}

/** What every sandbox binds, worked out once per kernel. */
export interface SandboxBase {
  bwrap: string
  /** The real path of the daemon's Node binary. */
  node: string
  /** The URL `@hostd/sdk` resolves to inside. */
  sdkUrl: string
  /** The runner's path inside. */
  runner: string
  /** Read-only binds (host path, sandbox path) besides the plugin's own. */
  binds: [string, string][]
  /** /lib, /lib64, /bin and /sbin: symlinks into /usr on merged-/usr systems, else folders to bind. */
  links: [string, string][]
  /** bwrap can forbid further user namespaces inside (0.8.0 and later). */
  disableUserns: boolean
}

export function sandboxBase(bwrap: string, help: string): SandboxBase {
  const flavour = sdkFlavour()
  const binds: [string, string][] = [
    ['/usr', '/usr'],
    [realpathSync(process.execPath), SANDBOX_PATHS.node],
  ]
  binds.push([realpathSync(SDK_DIR), SANDBOX_PATHS.sdk])
  for (const name of [...DATABASE_PACKAGES, ...(flavour === 'src' ? SDK_SOURCE_PACKAGES : [])])
    binds.push([realpathSync(join(REPO, 'node_modules', name)), `${SANDBOX_PATHS.modules}/${name}`])
  const links: [string, string][] = []
  for (const dir of ['/lib', '/lib64', '/bin', '/sbin']) {
    const stat = lstatSync(dir, { throwIfNoEntry: false })
    if (!stat) continue
    if (stat.isSymbolicLink()) {
      const target = realpathSync(dir)
      if (target.startsWith('/usr/')) links.push([relative('/', target), dir])
    } else if (stat.isDirectory()) binds.push([dir, dir])
  }
  return {
    bwrap,
    node: SANDBOX_PATHS.node,
    sdkUrl: `file://${SANDBOX_PATHS.sdk}/${flavour === 'dist' ? 'dist/index.mjs' : 'src/index.ts'}`,
    runner: RUNNER[flavour],
    binds,
    links,
    disableUserns: help.includes('--disable-userns'),
  }
}

export interface SandboxOptions {
  /** The plugin's folder on the host, bound read-only at /plugin. */
  pluginDir: string
  /** Its data folder on the host, bound read-write at /data; null gives an empty, private /data (a first look). */
  dataDir: string | null
  heapMb: number
  /** Outbound network (granted by an admin): the host's network namespace, DNS and CA certificates. Default none. */
  network?: boolean
  /**
   * Native addons: the SQLite driver of a plugin with its own database. Node's seat belt cannot hold native code, so
   * only such a plugin gets them; the sandbox bounds it all the same.
   */
  addons?: boolean
}

/** What a process with network sees of /etc: name resolution and the CA certificates, nothing else. */
const NETWORK_ETC = [
  '/etc/resolv.conf',
  '/etc/hosts',
  '/etc/nsswitch.conf',
  '/etc/gai.conf',
  '/etc/ssl',
  '/etc/ca-certificates',
]

/** bwrap's arguments for one plugin's process. */
export function sandboxArgs(base: SandboxBase, options: SandboxOptions): string[] {
  // --info-fd: bwrap says there (then closes it) the pid of the sandbox's first process, so the kernel can end it.
  const args = ['--unshare-all', '--unshare-user', '--die-with-parent', '--new-session', '--clearenv', '--info-fd', '4']
  if (base.disableUserns) args.push('--disable-userns')
  if (options.network) {
    args.push('--share-net')
    for (const path of NETWORK_ETC) args.push('--ro-bind-try', path, path)
  }
  args.push('--cap-drop', 'ALL', '--uid', NOBODY, '--gid', NOBODY, '--hostname', 'hostd-plugin')
  for (const [from, to] of base.binds) args.push('--ro-bind', from, to)
  for (const [target, link] of base.links) args.push('--symlink', target, link)
  args.push('--ro-bind', options.pluginDir, SANDBOX_PATHS.plugin)
  if (options.dataDir) args.push('--bind', options.dataDir, SANDBOX_PATHS.data)
  else args.push('--tmpfs', SANDBOX_PATHS.data)
  args.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp')
  args.push('--setenv', 'HOME', SANDBOX_PATHS.data, '--setenv', 'TMPDIR', '/tmp', '--chdir', SANDBOX_PATHS.plugin)
  args.push(
    '--',
    base.node,
    `--max-old-space-size=${options.heapMb}`,
    '--disable-warning=ExperimentalWarning',
    // A seat belt over the sandbox, not the boundary: Node's permission model is no defence against hostile code.
    '--permission',
    ...[SANDBOX_PATHS.sdk, SANDBOX_PATHS.modules, SANDBOX_PATHS.plugin, SANDBOX_PATHS.data, '/tmp'].map(
      (dir) => `--allow-fs-read=${dir}`,
    ),
    ...[SANDBOX_PATHS.data, '/tmp'].map((dir) => `--allow-fs-write=${dir}`),
    // No child processes, no workers; native addons only for a plugin with its own database (`addons`).
    ...(options.addons ? ['--allow-addons'] : []),
    base.runner,
  )
  return args
}

/**
 * Starts one sandboxed process: its descriptor 3 is the channel (`child.stdio[3]`); bwrap writes what it made on
 * `child.stdio[4]` (JSON: `child-pid`, the sandbox's first process, whose end ends every process inside).
 */
export function spawnSandboxed(base: SandboxBase, options: SandboxOptions): ChildProcess {
  return spawn(base.bwrap, sandboxArgs(base, options), {
    stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
    env: {},
    detached: false,
  })
}

/**
 * Whether the sandbox can start here: bwrap installed and user namespaces allowed. Runs a real sandboxed Node once
 * (about 30 ms). Resolves with the base to use, or the reason a person can act on.
 */
export async function probeSandbox(): Promise<SandboxBase | string> {
  const bwrap = findBwrap()
  if (!bwrap) return 'bubblewrap (bwrap) is not installed: apt install bubblewrap'
  const run = (file: string, args: string[]) =>
    new Promise<{ ok: boolean; out: string }>((resolve) => {
      execFile(file, args, { timeout: 10_000, killSignal: 'SIGKILL', env: {} }, (err, stdout, stderr) =>
        resolve({ ok: !err, out: `${stdout}${stderr}`.trim() }),
      )
    })
  const help = await run(bwrap, ['--help'])
  let base: SandboxBase
  try {
    base = sandboxBase(bwrap, help.out)
  } catch (err) {
    return `the sandbox cannot be set up: ${(err as Error).message}`
  }
  const probe = sandboxArgs(base, { pluginDir: SDK_DIR, dataDir: null, heapMb: 32 })
  // The same sandbox (no info descriptor to write to) with Node evaluating nothing instead of the runner.
  const info = probe.indexOf('--info-fd')
  probe.splice(info, 2)
  const args = [...probe.slice(0, probe.indexOf('--') + 2), '-e', '0']
  const result = await run(bwrap, args)
  if (result.ok) return base
  const why = result.out.split('\n').find((line) => line.trim()) ?? 'it exited with an error'
  return /uid map|user namespace|Operation not permitted|Permission denied/i.test(why)
    ? `user namespaces are refused here (${why}): allow them (kernel.unprivileged_userns_clone=1, or the AppArmor profile for bwrap)`
    : `bwrap could not start a sandbox: ${why}`
}
