/**
 * A real systemd for the unit tests: the machine's own /lib/systemd/systemd started as PID 1 of fresh PID, mount,
 * cgroup, UTS and IPC namespaces (the network is the host's, so a test reaches the services on loopback). It loads
 * only the units it is given (its unit and generator folders are emptied) and starts one target, so the units run
 * with everything systemd applies for real: mount namespaces, seccomp filters, capability sets, no_new_privs, user
 * and group, umask, the cgroup device policy. Nothing of the machine changes:
 *
 * - /run, /tmp, /opt, /etc/systemd/system, the unit and generator folders are empty tmpfs in the container;
 * - /var is an overlay whose changes land in a temporary folder (StateDirectory=, LogsDirectory=, PrivateTmp's
 *   /var/tmp);
 * - /etc/passwd and /etc/group are bind-mounted copies with the accounts the test adds;
 * - /proc/sys is read-only to the container (systemd as PID 1 would otherwise raise host-wide sysctls such as
 *   fs.file-max and, in the shared network namespace, net.unix.max_dgram_qlen); services still get systemd's own
 *   /proc; and the container has no CAP_SYS_TIME, CAP_WAKE_ALARM or CAP_SYS_MODULE (clock, modules);
 * - the container's own processes live in a cgroup of their own (cgroup2), removed afterwards.
 *
 * Boots in about a second. `stop()` kills the container's PID 1 (the kernel ends the rest of the PID namespace,
 * and the mount namespace with it), waits for the cgroup to empty, removes it and the temporary folder. If the test
 * process dies first, the chain of parent-death signals (setpriv --pdeathsig, unshare --kill-child) kills it all,
 * and the next container removes the empty cgroup and the folder that killed process left.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, readdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
export const SYSTEMD = '/lib/systemd/systemd'
/** Taken from the container's bounding set: the clock, wake alarms and kernel modules are the machine's, whatever
 * a PID 1 would do at boot (the units here do not keep them either). */
const HOST_WIDE_CAPABILITIES = '-sys_time,-wake_alarm,-sys_module'
/** From spawning to a systemd that answers systemctl: about a second; this much means something is wrong. */
const BOOT_TIMEOUT_MS = 20_000

/** Waits until nothing runs in the cgroup tree any more (the kernel ends a PID namespace with its PID 1), then
 * removes it, innermost first. */
async function removeCgroup(cgroup: string): Promise<void> {
  for (;;) {
    const events = await readFile(join(cgroup, 'cgroup.events'), 'utf8').catch(() => 'populated 0')
    if (/populated 0/.test(events)) break
    await new Promise((r) => setTimeout(r, 20))
  }
  const removeTree = async (path: string): Promise<void> => {
    for (const entry of await readdir(path, { withFileTypes: true }).catch(() => [])) {
      if (entry.isDirectory()) await removeTree(join(path, entry.name))
    }
    await rmdir(path).catch(() => undefined)
  }
  await removeTree(cgroup)
}

/** Where the cgroup2 hierarchy is mounted (/sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a hybrid one). */
async function cgroup2Root(): Promise<string> {
  const mountinfo = await readFile('/proc/self/mountinfo', 'utf8')
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ')
    if (right?.startsWith('cgroup2 ')) return left!.split(' ')[4]!
  }
  throw new Error('no cgroup2 hierarchy is mounted: a systemd container needs one')
}

/** A uid that is also a free gid, used by neither /etc/passwd nor /etc/group of the machine. */
export async function freeId(from = 64_200): Promise<number> {
  const used = new Set<number>()
  for (const file of ['/etc/passwd', '/etc/group']) {
    for (const line of (await readFile(file, 'utf8')).split('\n')) used.add(Number(line.split(':')[2]))
  }
  let id = from
  while (used.has(id)) id++
  return id
}

export interface ContainerOptions {
  /** File name -> content, written to /run/systemd/system (drop-ins as `name.service.d/file.conf`). */
  units: Record<string, string>
  /** The one unit systemd starts (--unit=). */
  target: string
  /** Lines appended to the container's /etc/passwd and /etc/group. */
  passwd?: string[]
  group?: string[]
  /** Member lists to extend in the container's /etc/group: group name -> user names. */
  groupMembers?: Record<string, string[]>
  /** Shell lines run as root in the container's mount namespace just before systemd starts (directories the units
   * expect, bind mounts). /var is the overlay by then, and /tmp the container's own. */
  setup?: string[]
  /** Shell lines run before /tmp is replaced by a tmpfs, to reach something in the machine's /tmp (bind it to /run
   * first); $ROOT is the container's temporary folder. */
  setupBeforeTmp?: string[]
}

export interface UnitContainer {
  /** The container's PID 1 (systemd) as the machine sees it. */
  pid: number
  /** The container's file system as seen from the machine: `/proc/<pid>/root`. */
  root: string
  /** `systemctl` in the container. */
  systemctl(...args: string[]): Promise<string>
  /** `systemctl show` properties of a unit. */
  show(unit: string, ...properties: string[]): Promise<Record<string, string>>
  /** The machine's PID of a unit's main process (null when it has none). */
  mainPid(unit: string): Promise<number | null>
  /** Runs a program in the container's mount and PID namespaces, as root. */
  exec(program: string, args: string[]): Promise<{ stdout: string; stderr: string; code: number }>
  stop(): Promise<void>
}

export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`
}

/** `hostd-units-<pid>-...`: the test process that made it, so a later run can tell what a killed one left. */
const PREFIX = 'hostd-units-'
const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Removes the cgroups and temporary folders of containers whose test process is gone (killed before its stop()):
 * their processes died with it (parent-death signals), so the cgroups are empty and the mounts gone. */
async function removeLeftovers(cgroupRoot: string): Promise<void> {
  const stale = (name: string) => {
    const pid = Number(/^hostd-units-(\d+)-/.exec(name)?.[1])
    return pid > 0 && pid !== process.pid && !alive(pid)
  }
  for (const name of (await readdir(cgroupRoot).catch(() => [])).filter(stale)) {
    const events = await readFile(join(cgroupRoot, name, 'cgroup.events'), 'utf8').catch(() => '')
    if (/populated 0/.test(events)) await removeCgroup(join(cgroupRoot, name))
  }
  for (const name of (await readdir(tmpdir()).catch(() => [])).filter(stale))
    await rm(join(tmpdir(), name), { recursive: true, force: true })
}

export async function startUnitContainer(options: ContainerOptions): Promise<UnitContainer> {
  const cgroupRoot = await cgroup2Root()
  await removeLeftovers(cgroupRoot)
  const dir = await mkdtemp(join(tmpdir(), `${PREFIX}${process.pid}-`))
  const cgroup = join(cgroupRoot, `${PREFIX}${process.pid}-${randomBytes(3).toString('hex')}`)
  await mkdir(cgroup)
  let child: ChildProcess | null = null
  try {
    for (const sub of ['units', 'var-upper', 'var-work']) await mkdir(join(dir, sub))
    for (const [name, content] of Object.entries(options.units)) {
      await mkdir(dirname(join(dir, 'units', name)), { recursive: true })
      await writeFile(join(dir, 'units', name), content)
    }
    const members = options.groupMembers ?? {}
    const groupLines = (await readFile('/etc/group', 'utf8'))
      .trimEnd()
      .split('\n')
      .map((line) => {
        const fields = line.split(':')
        const add = members[fields[0]!]
        if (!add) return line
        fields[3] = [...(fields[3] ? fields[3].split(',') : []), ...add].join(',')
        return fields.join(':')
      })
    await writeFile(
      join(dir, 'passwd'),
      `${(await readFile('/etc/passwd', 'utf8')).trimEnd()}\n${(options.passwd ?? []).join('\n')}\n`,
    )
    await writeFile(join(dir, 'group'), `${[...groupLines, ...(options.group ?? [])].join('\n')}\n`)
    const script = [
      'set -eu',
      `ROOT=${shellQuote(dir)}`,
      // This PID namespace's own /proc, and no host-wide sysctl changes from systemd as PID 1.
      'umount -l /proc',
      'mount -t proc -o nosuid,nodev,noexec proc /proc',
      'mount --bind /proc/sys /proc/sys',
      'mount -o remount,bind,ro /proc/sys',
      // The container's cgroup (the cgroup namespace's root) as systemd's unified hierarchy.
      'mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 /sys/fs/cgroup',
      'mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run',
      'mkdir -p /run/systemd/system /run/lock',
      'cp -r "$ROOT/units/." /run/systemd/system/',
      'mount -t overlay overlay -o "lowerdir=/var,upperdir=$ROOT/var-upper,workdir=$ROOT/var-work" /var',
      'mount --bind "$ROOT/passwd" /etc/passwd',
      'mount --bind "$ROOT/group" /etc/group',
      // Nothing reaches the machine's console (systemd logs nowhere: no journald here; the units' output goes to
      // files their drop-ins name).
      'mount --bind /dev/null /dev/console',
      ...(options.setupBeforeTmp ?? []),
      'mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp',
      'mount -t tmpfs -o mode=0755 tmpfs /opt',
      // Only the units given: no machine units, no generators.
      'mount -t tmpfs -o mode=0755 tmpfs /etc/systemd/system',
      'for d in /usr/lib/systemd/system /usr/lib/systemd/system-generators /etc/systemd/system-generators /usr/local/lib/systemd/system; do',
      '  if [ -d "$d" ]; then mount -t tmpfs -o mode=0755 tmpfs "$d"; fi',
      'done',
      ...(options.setup ?? []),
      'export container=hostd-test',
      `exec ${SYSTEMD} --unit=${shellQuote(options.target)} --log-target=null --show-status=no`,
    ].join('\n')
    await writeFile(join(dir, 'boot.sh'), script)
    // setpriv: killed with this process, and without the capabilities that act on the whole machine;
    // unshare --kill-child: systemd killed with unshare. The shell joins the fresh cgroup first, so the cgroup
    // namespace's root is that cgroup.
    child = spawn(
      'setpriv',
      [
        '--pdeathsig',
        'KILL',
        '--bounding-set',
        HOST_WIDE_CAPABILITIES,
        '--',
        'bash',
        '-c',
        'echo $$ > "$1/cgroup.procs" && exec unshare --pid --fork --kill-child --mount --propagation private --cgroup --uts --ipc -- bash "$2"',
        'boot',
        cgroup,
        join(dir, 'boot.sh'),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
  } catch (err) {
    await removeCgroup(cgroup)
    await rm(dir, { recursive: true, force: true })
    throw err
  }
  const unshare = child
  let output = ''
  unshare.stdout!.setEncoding('utf8').on('data', (d: string) => (output += d))
  unshare.stderr!.setEncoding('utf8').on('data', (d: string) => (output += d))
  const exited = new Promise<void>((resolve) => unshare.once('exit', () => resolve()))

  // The container's PID 1 is unshare's one child: the boot script, then systemd (which soon moves itself into the
  // container's init.scope cgroup).
  const bootDeadline = Date.now() + BOOT_TIMEOUT_MS
  const init = await (async () => {
    for (;;) {
      if (unshare.exitCode !== null || unshare.signalCode !== null) {
        throw new Error(`the systemd container did not start: ${output}`)
      }
      const children = (await readFile(`/proc/${unshare.pid}/task/${unshare.pid}/children`, 'utf8').catch(() => ''))
        .trim()
        .split(/\s+/)
        .filter(Boolean)
      const comm = children[0] ? (await readFile(`/proc/${children[0]}/comm`, 'utf8').catch(() => '')).trim() : ''
      if (comm === 'systemd') return Number(children[0])
      if (Date.now() > bootDeadline)
        throw new Error(
          `systemd did not start within ${BOOT_TIMEOUT_MS} ms (unshare's children: ${children.join(' ')} ${comm}): ${output}`,
        )
      // The container is being set up (a few mounts): check again on the next turn of the loop.
      await new Promise((r) => setTimeout(r, 20))
    }
  })().catch(async (err) => {
    unshare.kill('SIGKILL')
    await exited
    await removeCgroup(cgroup)
    await rm(dir, { recursive: true, force: true })
    throw err
  })

  const exec = async (program: string, args: string[]) => {
    try {
      const { stdout, stderr } = await run('nsenter', ['-t', String(init), '-m', '-p', '--', program, ...args], {
        maxBuffer: 16 * 1024 * 1024,
      })
      return { stdout, stderr, code: 0 }
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; code?: number }
      return { stdout: e.stdout ?? '', stderr: e.stderr ?? '', code: typeof e.code === 'number' ? e.code : 1 }
    }
  }
  const systemctl = async (...args: string[]) => {
    const out = await exec('systemctl', ['--no-pager', ...args])
    if (out.code !== 0) throw new Error(`systemctl ${args.join(' ')}: ${out.stderr || out.stdout}`)
    return out.stdout
  }
  /** Ends the container (everything in it dies with its PID 1) and removes its cgroup and folder. */
  const stop = async () => {
    try {
      process.kill(init, 'SIGKILL')
    } catch {
      /* already gone */
    }
    await exited
    await removeCgroup(cgroup)
    await rm(dir, { recursive: true, force: true })
  }
  // Once the manager answers, the container is up.
  for (;;) {
    const out = await exec('systemctl', ['is-system-running'])
    if (/^(initializing|starting|running|degraded|maintenance)$/m.test(out.stdout)) break
    if (unshare.exitCode !== null || Date.now() > bootDeadline) {
      await stop()
      throw new Error(`the systemd container did not answer (${JSON.stringify(out)}): ${output}`)
    }
    await new Promise((r) => setTimeout(r, 20))
  }

  const unitCgroup = (unit: string) => join(cgroup, 'system.slice', unit)
  const show = async (unit: string, ...properties: string[]): Promise<Record<string, string>> => {
    const out = await systemctl('show', unit, ...properties.flatMap((p) => ['-p', p]))
    return Object.fromEntries(
      out
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    )
  }
  return {
    pid: init,
    root: `/proc/${init}/root`,
    systemctl,
    show,
    async mainPid(unit) {
      const inside = Number((await show(unit, 'MainPID')).MainPID)
      if (!inside) return null
      const pids = (await readFile(join(unitCgroup(unit), 'cgroup.procs'), 'utf8').catch(() => ''))
        .split('\n')
        .filter(Boolean)
      for (const pid of pids) {
        const nspid = /^NSpid:\s+(.*)$/m
          .exec(await readFile(`/proc/${pid}/status`, 'utf8').catch(() => ''))?.[1]
          ?.trim()
          .split(/\s+/)
        if (nspid && Number(nspid[nspid.length - 1]) === inside) return Number(pid)
      }
      return null
    },
    exec,
    stop,
  }
}
