import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/**
 * A real NetworkManager (Debian's 1.42) on a private D-Bus system bus, in its own network namespace, with a veth
 * link to a second namespace that runs busybox udhcpd (recipe: shared/design/test-components.md). Everything is
 * named hnet-<random> and stopped by PID.
 */
export interface NetworkManagerUnderTest {
  busAddress: string
  /** The interface NetworkManager manages, and the DHCP server's side of the link. */
  device: string
  dhcpServer: { address: string; router: string; dns: string; poolPrefix: string }
  /** Runs nmcli against this NetworkManager (terse output). */
  nmcli(...args: string[]): Promise<string>
  /** `field -> value` of one connection, as nmcli itself reports it (the test's independent view). */
  fields(connection: string, fields: string): Promise<Record<string, string>>
  stop(): Promise<void>
}

function waitExit(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((r) => child.once('exit', () => r()))
}

export async function startNetworkManager(): Promise<NetworkManagerUnderTest> {
  const id = randomBytes(3).toString('hex')
  const dir = await mkdtemp(join(tmpdir(), 'hnet-'))
  const nsNm = `hnet-nm-${id}`
  const nsDhcp = `hnet-dh-${id}`
  const device = `hnet${id}a`
  const peer = `hnet${id}b`
  const busSocket = join(dir, 'system_bus_socket')
  const busAddress = `unix:path=${busSocket}`
  const children: ChildProcess[] = []
  let busPid = 0

  const stop = async () => {
    for (const child of children.reverse()) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      await waitExit(child)
    }
    if (busPid) {
      try {
        process.kill(busPid, 'SIGTERM')
      } catch {}
    }
    for (const ns of [nsNm, nsDhcp]) await run('ip', ['netns', 'del', ns]).catch(() => {})
    await rm(dir, { recursive: true, force: true })
  }

  try {
    await writeFile(
      join(dir, 'bus.conf'),
      `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>system</type><listen>${busAddress}</listen><auth>EXTERNAL</auth>
<policy context="default"><allow user="*"/><allow own="*"/><allow send_destination="*"/><allow receive_type="*"/></policy></busconfig>\n`,
    )
    busPid = Number(
      execFileSync('dbus-daemon', [`--config-file=${join(dir, 'bus.conf')}`, '--fork', '--print-pid'], {
        encoding: 'utf8',
      }).trim(),
    )

    await mkdir(join(dir, 'connections'))
    await mkdir(join(dir, 'state'))
    await writeFile(
      join(dir, 'nm.conf'),
      `[main]\nplugins=keyfile\nauth-polkit=false\ndhcp=internal\ndns=default\nrc-manager=unmanaged\n` +
        `systemd-resolved=false\nhostname-mode=none\nno-auto-default=*\n[keyfile]\npath=${join(dir, 'connections')}\n`,
    )

    await run('ip', ['netns', 'add', nsNm])
    await run('ip', ['netns', 'add', nsDhcp])
    await run('ip', ['link', 'add', device, 'type', 'veth', 'peer', 'name', peer])
    await run('ip', ['link', 'set', device, 'netns', nsNm])
    await run('ip', ['link', 'set', peer, 'netns', nsDhcp])
    await run('ip', ['-n', nsDhcp, 'addr', 'add', '10.77.0.1/24', 'dev', peer])
    await run('ip', ['-n', nsDhcp, 'link', 'set', peer, 'up'])

    await writeFile(join(dir, 'leases'), '')
    await writeFile(
      join(dir, 'udhcpd.conf'),
      `start 10.77.0.100\nend 10.77.0.110\ninterface ${peer}\nlease_file ${join(dir, 'leases')}\n` +
        `pidfile ${join(dir, 'udhcpd.pid')}\noption subnet 255.255.255.0\noption router 10.77.0.1\noption dns 10.77.0.53\n`,
    )
    children.push(
      spawn('ip', ['netns', 'exec', nsDhcp, 'busybox', 'udhcpd', '-f', join(dir, 'udhcpd.conf')], { stdio: 'ignore' }),
    )

    // Inside the namespace's own mount namespace (ip netns exec makes one): a read-only /sys so NetworkManager does not
    // wait for udev, a private /run, and its state dir under the test's temp dir. The script is fixed; paths are $1..$3.
    const script =
      'mount -o remount,bind,ro /sys && mount -t tmpfs tmpfs /run && mount --bind "$1" /var/lib/NetworkManager && ' +
      'exec env DBUS_SYSTEM_BUS_ADDRESS="$2" NetworkManager --debug --config="$3"'
    const nm = spawn(
      'ip',
      ['netns', 'exec', nsNm, 'sh', '-c', script, 'sh', join(dir, 'state'), busAddress, join(dir, 'nm.conf')],
      { stdio: 'ignore' },
    )
    children.push(nm)

    const env = { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: busAddress, LC_ALL: 'C' }
    const nmcli = async (...args: string[]) => (await run('nmcli', ['--terse', ...args], { env })).stdout
    for (let attempt = 0; ; attempt++) {
      if (nm.exitCode !== null) throw new Error('NetworkManager exited during start')
      const devices = await nmcli('--fields', 'DEVICE', 'device').catch(() => '')
      if (devices.split('\n').includes(device)) break
      if (attempt > 150) throw new Error('NetworkManager did not come up')
      await new Promise((r) => setTimeout(r, 100))
    }
    return {
      busAddress,
      device,
      dhcpServer: { address: '10.77.0.1', router: '10.77.0.1', dns: '10.77.0.53', poolPrefix: '10.77.0.1' },
      nmcli,
      async fields(connection, fields) {
        const out = await nmcli('--fields', fields, 'connection', 'show', 'id', connection)
        return Object.fromEntries(
          out
            .split('\n')
            .filter(Boolean)
            .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1)]),
        )
      },
      stop,
    }
  } catch (err) {
    await stop()
    throw err
  }
}
