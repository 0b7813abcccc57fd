/**
 * The systemd units (helper/systemd/) as shipped, run by a real systemd: the machine's systemd started as PID 1 of
 * its own namespaces (./unit-container.ts), so every protection is applied by systemd itself (mount namespaces,
 * the seccomp filters of SystemCallFilter=, RestrictAddressFamilies=, RestrictNamespaces= and the rest, capability
 * sets, no_new_privs, user, umask, the device policy). The unit files are loaded verbatim; the test adds only
 * drop-ins that set the port, the bind address and the log level, where the output goes, and the helper's isolated
 * apt root; and it uncomments the unit's own `SupplementaryGroups=docker` line to reach a real Docker engine.
 *
 * Then it uses the real daemon (its build, all built-in plugins) as a client would: setup and sign-in, metrics,
 * processes with the helper's nethogs trace, storage with the helper's smartctl, host facts and settings, the
 * interface list, the containers list, and a terminal shell inside the daemon's confinement, which checks the
 * limits from the inside and runs a bubblewrap sandbox with user, mount, PID, network, IPC and UTS namespaces (what
 * third-party plugins will run under); through that shell it also has the helper run apt-get and dpkg (an isolated
 * root: a setuid file, a maintainer script). It holds the units to their `systemd-analyze security` ratings (daemon
 * <= 4.0, helper <= 7.0) and to a clean `systemd-analyze verify`, and, last, ends the daemon cleanly (exit 0) to see
 * systemd start it again (Restart=always) and its one line saying why it ended.
 *
 * Not run here: the helper's D-Bus actions (this systemd has no D-Bus, NetworkManager or logind), SMB mounts (no
 * CIFS server), power actions; IPAddressDeny= is not set. Needs root, systemd, bubblewrap, nethogs, smartctl,
 * dpkg-dev, apt-utils and dockerd (helper/test/apt-packages.txt, plugins/containers/test/apt-packages.txt).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFile } from 'node:child_process'
import { chmod, mkdir, readdir, readFile, readlink, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { fetch } from 'undici'
import WebSocket from 'ws'
import { createAptRoot, type AptRoot } from '../../test/support/apt-root.ts'
import { eventually, freePort } from '@hostd/sdk/testing'
import { insecureAgent, REPO_ROOT } from '../../test/support/daemon.ts'
import { startEngine, type TestEngine } from '../../plugins/containers/test/support/engine.ts'
import { freeId, shellQuote, startUnitContainer, type UnitContainer } from './unit-container.ts'

const run = promisify(execFile)
const UNITS = join(REPO_ROOT, 'helper', 'systemd')
const DAEMON_UNIT = 'hostd.service'
const HELPER_UNIT = 'hostd-helper.service'
const MAX_EXPOSURE = { [DAEMON_UNIT]: 4.0, [HELPER_UNIT]: 7.0 }
const DEMO_PACKAGE = 'hostd-units-demo'

/** A package with what dpkg and maintainer scripts do as root: a setuid file, a postinst that chowns and writes. */
async function publishDemoPackage(apt: AptRoot): Promise<void> {
  const tree = join(apt.dir, 'build', DEMO_PACKAGE)
  await mkdir(join(tree, 'DEBIAN'), { recursive: true })
  await mkdir(join(tree, 'usr', 'bin'), { recursive: true })
  await writeFile(
    join(tree, 'DEBIAN', 'control'),
    [
      `Package: ${DEMO_PACKAGE}`,
      'Version: 1.0',
      'Architecture: all',
      'Maintainer: hostd tests <tests@example.invalid>',
      'Description: hostd units test',
      ' A package built by the units test.',
      '',
    ].join('\n'),
  )
  await writeFile(
    join(tree, 'DEBIAN', 'postinst'),
    '#!/bin/sh\nset -e\ntouch "$DPKG_ROOT/postinst-ran"\nchown 1:1 "$DPKG_ROOT/postinst-ran"\n',
  )
  await chmod(join(tree, 'DEBIAN', 'postinst'), 0o755)
  await writeFile(join(tree, 'usr', 'bin', DEMO_PACKAGE), '#!/bin/sh\necho demo\n')
  await chmod(join(tree, 'usr', 'bin', DEMO_PACKAGE), 0o4755)
  await run('dpkg-deb', ['--root-owner-group', '--build', tree, join(apt.dir, 'repo', `${DEMO_PACKAGE}_1.0_all.deb`)])
  await apt.publish()
}

/** The [Service] settings of a unit file, each key's values in order (comments and other sections left out). */
function serviceSettings(text: string): Map<string, string[]> {
  const settings = new Map<string, string[]>()
  let section = ''
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (!line || line.startsWith('#') || line.startsWith(';')) continue
    if (line.startsWith('[')) {
      section = line
      continue
    }
    if (section !== '[Service]') continue
    const eq = line.indexOf('=')
    settings.set(line.slice(0, eq), [...(settings.get(line.slice(0, eq)) ?? []), line.slice(eq + 1)])
  }
  return settings
}
const last = (settings: Map<string, string[]>, key: string) => settings.get(key)?.at(-1) ?? ''

/** capability(7) numbers, for reading CapBnd in /proc/<pid>/status. */
const CAPABILITIES = [
  'CHOWN',
  'DAC_OVERRIDE',
  'DAC_READ_SEARCH',
  'FOWNER',
  'FSETID',
  'KILL',
  'SETGID',
  'SETUID',
  'SETPCAP',
  'LINUX_IMMUTABLE',
  'NET_BIND_SERVICE',
  'NET_BROADCAST',
  'NET_ADMIN',
  'NET_RAW',
  'IPC_LOCK',
  'IPC_OWNER',
  'SYS_MODULE',
  'SYS_RAWIO',
  'SYS_CHROOT',
  'SYS_PTRACE',
  'SYS_PACCT',
  'SYS_ADMIN',
  'SYS_BOOT',
  'SYS_NICE',
  'SYS_RESOURCE',
  'SYS_TIME',
  'SYS_TTY_CONFIG',
  'MKNOD',
  'LEASE',
  'AUDIT_WRITE',
  'AUDIT_CONTROL',
  'SETFCAP',
  'MAC_OVERRIDE',
  'MAC_ADMIN',
  'SYSLOG',
  'WAKE_ALARM',
  'BLOCK_SUSPEND',
  'AUDIT_READ',
  'PERFMON',
  'BPF',
  'CHECKPOINT_RESTORE',
]
function capabilityMask(names: string): bigint {
  let mask = 0n
  for (const name of names.split(/\s+/).filter(Boolean)) {
    const bit = CAPABILITIES.indexOf(name.replace(/^CAP_/, ''))
    if (bit < 0) throw new Error(`unknown capability ${name}`)
    mask |= 1n << BigInt(bit)
  }
  return mask
}

interface ProcStatus {
  uid: string[]
  groups: number[]
  capBnd: bigint
  capEff: bigint
  capAmb: bigint
  noNewPrivs: string
  seccomp: string
}
async function procStatus(pid: number): Promise<ProcStatus> {
  const text = await readFile(`/proc/${pid}/status`, 'utf8')
  const field = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(text)?.[1]?.trim() ?? ''
  return {
    uid: field('Uid').split(/\s+/),
    groups: field('Groups').split(/\s+/).filter(Boolean).map(Number),
    capBnd: BigInt(`0x${field('CapBnd')}`),
    capEff: BigInt(`0x${field('CapEff')}`),
    capAmb: BigInt(`0x${field('CapAmb')}`),
    noNewPrivs: field('NoNewPrivs'),
    seccomp: field('Seccomp'),
  }
}

/** The mount points of a process's mount namespace, from its mountinfo. */
async function mountPoints(pid: number): Promise<{ point: string; options: string }[]> {
  return (await readFile(`/proc/${pid}/mountinfo`, 'utf8'))
    .trim()
    .split('\n')
    .map((line) => {
      const f = line.split(' ')
      return { point: f[4]!, options: f[5]! }
    })
}

/** A terminal socket: binary frames are the PTY, text frames control messages. */
class Terminal {
  readonly ws: WebSocket
  output = ''
  readonly frames: any[] = []
  constructor(url: string, token: string) {
    this.ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` }, rejectUnauthorized: false })
    this.ws.on('message', (data: Buffer, binary: boolean) => {
      if (binary) this.output += data.toString('latin1')
      else this.frames.push(JSON.parse(data.toString('utf8')))
    })
    this.ws.on('error', () => undefined)
  }
  async until<T>(probe: () => T | undefined): Promise<T> {
    for (;;) {
      const found = probe()
      if (found !== undefined) return found
      if (this.ws.readyState === WebSocket.CLOSED)
        throw new Error(
          `terminal closed (frames ${JSON.stringify(this.frames)}, output ${JSON.stringify(this.output.slice(-500))})`,
        )
      await new Promise((r) => setTimeout(r, 20))
    }
  }
  /** Runs a command line; answers its output, between markers the shell computes (the echoed input never matches). */
  async run(command: string): Promise<string> {
    const id = Math.floor(Math.random() * 1e9)
    this.ws.send(Buffer.from(`echo B$((${id}+1)); ${command}; echo E$((${id}+1))\n`), { binary: true })
    const pattern = new RegExp(`B${id + 1}\\r\\n([\\s\\S]*?)E${id + 1}\\r\\n`)
    const match = await this.until(() => this.output.match(pattern) ?? undefined)
    return match[1]!.replace(/\r\n/g, '\n').trimEnd()
  }
}

describe('the systemd units', () => {
  it.each([DAEMON_UNIT, HELPER_UNIT])(
    'systemd-analyze security --offline=yes rates %s within its limit',
    async (unit) => {
      const { stdout } = await run('systemd-analyze', ['security', '--offline=yes', '--no-pager', join(UNITS, unit)])
      const level = new RegExp(`Overall exposure level for ${unit.replace('.', '\\.')}: (\\d+\\.\\d)`).exec(stdout)
      expect(level, stdout).not.toBeNull()
      expect(Number(level![1])).toBeLessThanOrEqual(MAX_EXPOSURE[unit as keyof typeof MAX_EXPOSURE])
    },
  )

  it('restarts the daemon whatever its exit code (Restart=always, not on-failure: a clean exit 0 too)', async () => {
    expect(last(serviceSettings(await readFile(join(UNITS, DAEMON_UNIT), 'utf8')), 'Restart')).toBe('always')
  })
})

describe('the units under a real systemd', () => {
  const daemonText = () => readFile(join(UNITS, DAEMON_UNIT), 'utf8')
  let daemonSettings: Map<string, string[]>
  let helperSettings: Map<string, string[]>
  let container: UnitContainer
  let engine: TestEngine
  let apt: AptRoot
  let port: number
  let uid: number
  let dockerGid: number
  let token: string
  const url = (path: string) => `https://127.0.0.1:${port}${path}`
  const api = async (
    path: string,
    init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
  ) => {
    const res = await fetch(url(path), {
      dispatcher: insecureAgent,
      method: init.method ?? 'GET',
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(init.body ? { 'content-type': 'application/json' } : {}),
        ...init.headers,
      },
      body: init.body ? JSON.stringify(init.body) : undefined,
    })
    const text = await res.text()
    return { status: res.status, text, json: () => JSON.parse(text) }
  }
  const helperLog = async () =>
    (await readFile(join(container.root, 'var/log/hostd-helper/helper.log'), 'utf8').catch(() => ''))
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))

  beforeAll(async () => {
    const [daemonUnit, helperUnit] = await Promise.all([daemonText(), readFile(join(UNITS, HELPER_UNIT), 'utf8')])
    daemonSettings = serviceSettings(daemonUnit)
    helperSettings = serviceSettings(helperUnit)
    // The unit's own optional line for the containers plugin.
    const withDocker = daemonUnit.replace(/^# SupplementaryGroups=docker$/m, 'SupplementaryGroups=docker')
    expect(withDocker).not.toBe(daemonUnit)
    const started = await Promise.allSettled([startEngine(), createAptRoot()])
    if (started[0].status === 'fulfilled') engine = started[0].value
    if (started[1].status === 'fulfilled') apt = started[1].value
    for (const outcome of started) if (outcome.status === 'rejected') throw outcome.reason
    await publishDemoPackage(apt)
    ;[port, uid] = await Promise.all([freePort(), freeId()])
    dockerGid = (await stat(engine.socket)).gid
    const user = last(daemonSettings, 'User')
    const stub = (description: string) => `[Unit]\nDescription=${description}\n`
    const daemonDropIn = (p: number) =>
      [
        '[Service]',
        `Environment=HOSTD_HOST=127.0.0.1 HOSTD_PORT=${p} HOSTD_LOG_LEVEL=info`,
        'StandardOutput=append:/run/hostd.out',
        'StandardError=append:/run/hostd.out',
        '',
      ].join('\n')
    container = await startUnitContainer({
      units: {
        [DAEMON_UNIT]: withDocker,
        [HELPER_UNIT]: helperUnit,
        [`${DAEMON_UNIT}.d/test.conf`]: daemonDropIn(port),
        // Not in dry-run: its actions run in the container (systemctl reaches the container's systemd; there is no
        // D-Bus; mounts stay in the container's mount namespace). The package actions work on the isolated apt root.
        [`${HELPER_UNIT}.d/test.conf`]: [
          '[Service]',
          `Environment=HOSTD_HELPER_APT_CONFIG=${apt.aptConfig}`,
          'StandardOutput=append:/run/hostd-helper.out',
          'StandardError=append:/run/hostd-helper.out',
          '',
        ].join('\n'),
        'hostd-test.target': `${stub('hostd under test')}Wants=${HELPER_UNIT} ${DAEMON_UNIT}\n`,
        ...Object.fromEntries(
          ['sysinit', 'basic', 'shutdown', 'network', 'network-online', 'multi-user'].map((t) => [
            `${t}.target`,
            stub(t),
          ]),
        ),
      },
      target: 'hostd-test.target',
      // The account the README has the admin create (useradd --system --home /var/lib/hostd hostd: shell /bin/sh).
      passwd: [`${user}:x:${uid}:${uid}::/var/lib/hostd:/bin/sh`],
      group: [`${user}:x:${uid}:`],
      groupMembers: { docker: [user] },
      // The engine's socket where the unit's daemon looks for it; the apt root at its own path in the new /tmp; the
      // repository held in /run before the new /tmp hides it (a checkout under /tmp, as CI's may be).
      setupBeforeTmp: [
        'touch /run/docker.sock',
        `mount --bind ${shellQuote(engine.socket)} /run/docker.sock`,
        'mkdir /run/apt-root',
        `mount --bind ${shellQuote(apt.dir)} /run/apt-root`,
        'mkdir /run/hostd-repo /run/hostd-repo-top',
        'chmod 0755 /run/hostd-repo-top',
        `mount --bind ${shellQuote(REPO_ROOT)} /run/hostd-repo`,
      ],
      setup: [
        // The layout the units expect: the repository (read-only here: the build is already current) at /opt/hostd
        // for the helper and as the release `current` points at; the data dir owned by the daemon's account.
        // A read-only overlay whose top layer is an empty 0755 folder: the checkout's own folder may be 0700 (a
        // mktemp folder cloned into), which the daemon's account could not enter; its files are readable as cloned.
        'mkdir -p /opt/hostd /var/lib/hostd/app',
        'mount -t overlay overlay -o lowerdir=/run/hostd-repo-top:/run/hostd-repo /opt/hostd',
        `chown ${uid}:${uid} /var/lib/hostd /var/lib/hostd/app`,
        'chmod 0700 /var/lib/hostd',
        'ln -s /opt/hostd /var/lib/hostd/app/current',
        `mkdir -p ${shellQuote(apt.dir)}`,
        `mount --move /run/apt-root ${shellQuote(apt.dir)}`,
        'rmdir /run/apt-root',
      ],
    })
    // Wait for the daemon's /health; a unit that failed ends the wait with its state and output (a port taken
    // meanwhile by another test: another port, up to three times).
    let ports = 1
    let restarts = 0
    const deadline = Date.now() + 30_000
    for (;;) {
      const healthy = await fetch(url('/health'), {
        dispatcher: insecureAgent,
        signal: AbortSignal.timeout(5000),
      }).then(
        (r) => r.ok,
        () => false,
      )
      if (healthy) break
      const state = await container.show(DAEMON_UNIT, 'ActiveState', 'SubState', 'Result', 'NRestarts')
      const stuck = Date.now() > deadline
      if (stuck || state.ActiveState === 'failed' || Number(state.NRestarts) > restarts) {
        const out = await readFile(join(container.root, 'run/hostd.out'), 'utf8').catch(() => '')
        if (!stuck && /port already in use/.test(out) && ports++ < 3) {
          port = await freePort()
          await writeFile(join(container.root, 'run/systemd/system', `${DAEMON_UNIT}.d/test.conf`), daemonDropIn(port))
          await writeFile(join(container.root, 'run/hostd.out'), '')
          await container.systemctl('daemon-reload')
          await container.systemctl('restart', DAEMON_UNIT)
          restarts = Number((await container.show(DAEMON_UNIT, 'NRestarts')).NRestarts)
          continue
        }
        const status = await container
          .exec('systemctl', ['--no-pager', 'status', DAEMON_UNIT, HELPER_UNIT])
          .then((r) => r.stdout)
        throw new Error(`${DAEMON_UNIT} did not come up: ${JSON.stringify(state)}\n${out.slice(-3000)}\n${status}`)
      }
      await new Promise((r) => setTimeout(r, 50))
    }
    // First-run setup and sign-in, as the README shows them.
    const setup = await api('/api/setup', {
      method: 'POST',
      body: { username: 'admin', password: 'correct horse battery' },
    })
    expect(setup.status, setup.text).toBe(201)
    const login = await api('/api/auth/login', {
      method: 'POST',
      body: { username: 'admin', password: 'correct horse battery' },
      headers: { 'X-Svc-Client': 'test' },
    })
    expect(login.status, login.text).toBe(200)
    token = login.json().token
  }, 60_000)

  afterAll(async () => {
    await container?.stop()
    await engine?.stop()
    await apt?.remove()
  })

  it('systemd-analyze verify reports nothing for either unit (in the container, where their paths exist)', async () => {
    for (const unit of [DAEMON_UNIT, HELPER_UNIT]) {
      const copy = `/run/verify/${unit}`
      await container.exec('mkdir', ['-p', '/run/verify'])
      await container.exec('cp', [`/opt/hostd/helper/systemd/${unit}`, copy])
      const out = await container.exec('systemd-analyze', ['verify', '--man=no', copy])
      expect({ unit, ...out }).toEqual({ unit, stdout: '', stderr: '', code: 0 })
    }
  })

  it('runs the daemon unprivileged and confined as the unit says', async () => {
    const pid = (await container.mainPid(DAEMON_UNIT))!
    expect(pid).toBeGreaterThan(0)
    const status = await procStatus(pid)
    expect(status.uid).toEqual([String(uid), String(uid), String(uid), String(uid)])
    expect(status.groups).toContain(dockerGid)
    expect(last(daemonSettings, 'CapabilityBoundingSet')).toBe('')
    expect({ bounding: status.capBnd, effective: status.capEff, ambient: status.capAmb }).toEqual({
      bounding: 0n,
      effective: 0n,
      ambient: 0n,
    })
    expect(status.noNewPrivs).toBe('1')
    expect(status.seccomp).toBe('2') // filter mode: SystemCallFilter=, RestrictAddressFamilies=, RestrictNamespaces=...
    const mounts = await mountPoints(pid)
    expect(mounts.find((m) => m.point === '/')!.options).toMatch(/(^|,)ro(,|$)/)
    expect(mounts.filter((m) => m.point === '/var/lib/hostd').at(-1)!.options).toMatch(/(^|,)rw(,|$)/)
    // Nothing mounted over anything in /proc (a permanently empty mount point such as binfmt_misc aside): the
    // kernel lets bubblewrap mount a procfs in a user namespace only while the procfs it sees is fully visible.
    expect(mounts.filter((m) => m.point.startsWith('/proc/') && m.point !== '/proc/sys/fs/binfmt_misc')).toEqual([])
    // ProtectHostname= and PrivateUsers= stay off: the host name it reports follows the host's, and the owners of
    // processes and files are the real accounts.
    for (const ns of ['uts', 'user'])
      expect(await readlink(`/proc/${pid}/ns/${ns}`)).toBe(await readlink(`/proc/${container.pid}/ns/${ns}`))
  })

  it('runs the helper as root with the capability set of its unit, in the mount namespace of PID 1', async () => {
    const pid = (await container.mainPid(HELPER_UNIT))!
    expect(pid).toBeGreaterThan(0)
    const status = await procStatus(pid)
    expect(status.uid).toEqual(['0', '0', '0', '0'])
    // What the unit keeps, of what this machine's systemd had to give.
    const available = (await procStatus(container.pid)).capBnd
    expect(status.capBnd.toString(16)).toBe(
      (capabilityMask(last(helperSettings, 'CapabilityBoundingSet')) & available).toString(16),
    )
    expect(status.noNewPrivs).toBe('1')
    expect(status.seccomp).toBe('2')
    // Its mounts (SMB shares, unmounts, ejects) happen where the host sees them: no mount namespace of its own.
    expect(await readlink(`/proc/${pid}/ns/mnt`)).toBe(await readlink(`/proc/${container.pid}/ns/mnt`))
    expect(await readlink(`/proc/${pid}/ns/uts`)).toBe(await readlink(`/proc/${container.pid}/ns/uts`))
  })

  it("serves the signed-in admin and the plugins' reads, and reaches the helper", async () => {
    expect((await api('/api/auth/me')).json()).toMatchObject({ username: 'admin', role: 'admin' })

    // Metrics: /proc/stat, meminfo, loadavg, /sys (ProcSubset= and ProtectProc= stay off for these).
    const metrics = await api('/api/metrics')
    expect(metrics.status, metrics.text).toBe(200)
    expect(metrics.json()).toMatchObject({
      cpu: { cores: expect.any(Array) },
      memory: { totalBytes: expect.any(Number) },
    })
    expect(metrics.json().memory.totalBytes).toBeGreaterThan(0)

    // Host facts and the interface list (netlink: RestrictAddressFamilies= keeps AF_NETLINK).
    const info = await api('/api/system/info')
    expect(info.status, info.text).toBe(200)
    expect(info.json().os.id).toBeTruthy()
    const settings = await api('/api/system/settings')
    expect(settings.status, settings.text).toBe(200)
    expect(settings.json().hostname).toBeTruthy()
    const network = await api('/api/system/network')
    expect(network.status, network.text).toBe(200)
    expect(network.json().interfaces.length).toBeGreaterThan(0)

    // Storage: lsblk reads /sys (PrivateDevices= hides the disks' device nodes, not the disks), statfs of mounts.
    const storage = await api('/api/storage')
    expect(storage.status, storage.text).toBe(200)
    const disks = storage.json().disks as { name: string }[]
    expect(disks.length).toBeGreaterThan(0)
    expect(storage.json().volumes.length).toBeGreaterThan(0)

    // The helper answers the daemon through its socket (peer check: the daemon's uid).
    const privileged = await api('/api/system/privileged')
    expect(privileged.json().helper).toEqual({ available: true, dryRun: false })

    // SMART: smartctl run by the helper under its unit (a virtual disk may have no SMART data: 409, still run).
    const disk = disks.find((d) => !/^(zram|loop|ram)\d/.test(d.name)) ?? disks[0]!
    const smart = await api(`/api/storage/smart/${disk.name}`)
    expect([200, 409], smart.text).toContain(smart.status)
    // The process sample with the helper's nethogs trace (packet sockets, CAP_NET_RAW/NET_ADMIN/SYS_PTRACE).
    const processes = await api('/api/activity/processes?network=1')
    expect(processes.status, processes.text).toBe(200)
    expect(processes.json().processes.some((p: { user: string }) => p.user === last(daemonSettings, 'User'))).toBe(true)
    const log = await helperLog()
    expect(log.find((e) => e.action === 'storage.smart')).toMatchObject({ outcome: 'ok', exitCode: expect.any(Number) })
    expect(log.find((e) => e.action === 'net.processTraffic')).toMatchObject({ outcome: 'ok', exitCode: 0 })

    // The containers list from a real Docker engine, through /var/run/docker.sock and the docker group.
    const containers = await api('/api/containers')
    expect(containers.status, containers.text).toBe(200)
    expect(containers.json()).toMatchObject({ engine: { available: true }, items: expect.any(Array) })
  })

  /** A terminal shell from the daemon: a child of the daemon, so inside everything its unit applies. */
  async function shell<T>(use: (terminal: Terminal) => Promise<T>): Promise<T> {
    const terminal = new Terminal(url('/api/terminal').replace(/^https/, 'wss'), token)
    try {
      const ready = await terminal.until(() => terminal.frames.find((f) => f.type === 'ready'))
      expect(ready).toMatchObject({ account: last(daemonSettings, 'User') })
      return await use(terminal)
    } finally {
      terminal.ws.close()
    }
  }

  it('opens a terminal shell inside the confinement, where a bubblewrap sandbox still works', () =>
    shell(async (terminal) => {
      expect(await terminal.run('id -u')).toBe(String(uid))
      expect(await terminal.run('umask')).toBe(last(daemonSettings, 'UMask'))
      expect(await terminal.run('grep -E "^(NoNewPrivs|CapEff):" /proc/self/status | tr -s "\\t " " "')).toBe(
        'CapEff: 0000000000000000\nNoNewPrivs: 1',
      )
      // ProtectSystem=strict, ProtectHome=, PrivateDevices=: the OS read-only, homes hidden, no disk nodes; the data
      // dir writable.
      expect(await terminal.run('touch /usr/hostd-probe 2>&1; touch /etc/hostd-probe 2>&1')).toMatch(
        /Read-only file system[\s\S]*Read-only file system/,
      )
      expect(await terminal.run('ls /root 2>&1 | head -1')).toMatch(/Permission denied/)
      expect(await terminal.run('ls /dev | grep -cE "^(sd|vd|nvme|xvd|hd)" || true')).toBe('0')
      expect(await terminal.run('test -c /dev/ptmx && test -d /dev/pts && echo pty')).toBe('pty')
      expect(await terminal.run('touch /var/lib/hostd/probe && rm /var/lib/hostd/probe && echo writable')).toBe(
        'writable',
      )
      // ProtectProc= stays off: other accounts' processes are visible (the system plugin looks for sshd, NTP daemons
      // and firewalld by name).
      expect(await terminal.run('cat /proc/1/comm')).toBe('systemd')
      // RestrictAddressFamilies=: a packet socket is refused by the filter (EAFNOSUPPORT), not by permissions (EPERM).
      expect(
        await terminal.run(
          'python3 -c "import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)" 2>&1 | tail -1',
        ),
      ).toMatch(/Errno 97\]/)
      // RestrictNamespaces=: the cgroup namespace is refused; the sandbox's namespaces are not.
      expect(await terminal.run('unshare --user --cgroup true 2>&1')).toMatch(/Operation not permitted/)
      const sandbox = await terminal.run(
        'bwrap --unshare-user --unshare-ipc --unshare-pid --unshare-net --unshare-uts --hostname plugin-sandbox ' +
          '--ro-bind / / --proc /proc --dev /dev --tmpfs /tmp -- /bin/sh -c ' +
          '\'echo "$(hostname) $$ $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | tr "\\n" " ")"\' 2>&1',
      )
      // Its own host name, a PID namespace of its own (the shell is PID 1 or 2), a network with only loopback.
      expect(sandbox).toMatch(/^plugin-sandbox [12] lo$/)
    }))

  it('runs apt-get and dpkg through the helper under its unit: a setuid file, a maintainer script', () =>
    shell(async (terminal) => {
      // Asked by the daemon's account over the helper's socket (the peer check passes), from inside the daemon's unit.
      const call = (action: string, args: unknown) =>
        terminal.run(`python3 -c 'import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect("/run/hostd-helper/helper.sock")
s.sendall((json.dumps({"action": sys.argv[1], "args": json.loads(sys.argv[2])}) + "\\n").encode())
print([line for line in s.makefile() if not line.startswith("{\\"event")][-1].strip())' ${action} '${JSON.stringify(args)}'`)
      expect(JSON.parse(await call('pkg.refresh', {}))).toEqual({ ok: true, result: { exitCode: 0 } })
      expect(JSON.parse(await call('pkg.install', { packages: [DEMO_PACKAGE] }))).toEqual({
        ok: true,
        result: { exitCode: 0 },
      })
      expect(await apt.installed()).toMatchObject({ [DEMO_PACKAGE]: '1.0' })
      expect(((await stat(join(apt.dir, 'root', 'usr', 'bin', DEMO_PACKAGE))).mode & 0o7777).toString(8)).toBe('4755')
      expect((await stat(join(apt.dir, 'root', 'postinst-ran'))).uid).toBe(1)
    }))

  it("creates the data dir's files and folders with the unit's umask", async () => {
    // The data dir holds the database, the TLS key and the session secret: nothing in it for other accounts.
    expect(last(daemonSettings, 'UMask')).toBe('0077')
    const umask = parseInt(last(daemonSettings, 'UMask'), 8)
    const dataDir = join(container.root, 'var/lib/hostd')
    const modes: Record<string, string> = {}
    const walk = async (path: string, rel: string): Promise<void> => {
      for (const entry of await readdir(path, { withFileTypes: true })) {
        if (rel === '' && entry.name === 'app') continue // the release folder, made by this test's setup
        const full = join(path, entry.name)
        const mode = (await stat(full)).mode & 0o777
        modes[join(rel, entry.name)] = mode.toString(8)
        if (entry.isDirectory()) await walk(full, join(rel, entry.name))
      }
    }
    await walk(dataDir, '')
    expect(Object.keys(modes)).toEqual(expect.arrayContaining(['hostd.sqlite', 'tls']))
    const open = Object.entries(modes).filter(([, mode]) => (parseInt(mode, 8) & umask) !== 0)
    expect(open).toEqual([])
    expect(((await stat(dataDir)).mode & 0o777).toString(8)).toBe(
      last(daemonSettings, 'StateDirectoryMode').replace(/^0/, ''),
    )
  })

  // Last: it ends the daemon. Main's Restart=on-failure left a daemon that exited 0 down.
  it('restarts the daemon after a clean exit 0 (SIGTERM from outside systemd), which said why in one line', async () => {
    const restarts = async () => Number((await container.show(DAEMON_UNIT, 'NRestarts')).NRestarts)
    const before = await restarts()
    const pid = (await container.mainPid(DAEMON_UNIT))!
    process.kill(pid, 'SIGTERM')
    const health = () =>
      fetch(url('/health'), { dispatcher: insecureAgent, signal: AbortSignal.timeout(5000) }).then(
        (r) => r.ok,
        () => false,
      )
    await eventually(
      async () => (await restarts()) > before && (await container.mainPid(DAEMON_UNIT)) !== pid && health(),
    )
    const out = await readFile(join(container.root, 'run/hostd.out'), 'utf8')
    expect(out).toMatch(/^hostd: exiting with code 0: SIGTERM \(stopped in [\d.]+ m?s\)$/m)
    expect((await api('/api/auth/me')).json()).toMatchObject({ username: 'admin' })
  }, 60_000)
})
