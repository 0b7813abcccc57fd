import { describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { join } from 'node:path'
import {
  memoryFigures,
  parseDiskstats,
  parseLoadavg,
  parseMeminfo,
  parseMilliCelsius,
  parseMounts,
  parseNetDev,
  parsePageSize,
  parseProcStat,
  parseUptime,
} from '../src/adapters/procfs-parse.ts'
import {
  commandLine,
  parseNethogs,
  parsePasswd,
  parsePidIo,
  parsePidStat,
  parsePidStatus,
  processName,
} from '../src/adapters/process-parse.ts'
import { HostReader } from '../src/adapters/host-reader.ts'
import { buildSnapshot, cpuUsage } from '../src/snapshot.ts'
import { formatLabels, prometheusText } from '../src/prometheus.ts'

const FIXTURES = join(import.meta.dirname, 'fixtures')
const fixture = (p: string) => readFileSync(join(FIXTURES, p), 'utf8')

describe('host file parsers on recorded samples', () => {
  it('reads /proc/stat cpu lines: the aggregate first, then each core', () => {
    const cpu = parseProcStat(fixture('proc-sample/proc/stat'))
    expect(cpu[0]!.id).toBe(-1)
    expect(cpu.slice(1).map((c) => c.id)).toEqual([0, 1])
    // The aggregate is the sum of the cores.
    expect(cpu[0]).toMatchObject({ user: 189434, system: 27171, idle: 225329, iowait: 1032, softirq: 5525, steal: 137 })
    // The aggregate is the sum of the cores, give or take the kernel's per-line rounding.
    expect(Math.abs(cpu[0]!.user - (cpu[1]!.user + cpu[2]!.user))).toBeLessThanOrEqual(2)
  })

  it('computes CPU shares between two readings', () => {
    const [before] = parseProcStat('cpu  100 0 50 800 10 0 0 0 0 0\n')
    const [after] = parseProcStat('cpu  160 20 70 880 20 0 0 0 0 0\n')
    // deltas: user 60 + nice 20 = 80, system 20, idle 80, iowait 10, total 190
    const u = cpuUsage(after!, before)
    expect(u.user).toBeCloseTo((80 / 190) * 100, 0)
    expect(u.system).toBeCloseTo((20 / 190) * 100, 0)
    expect(u.iowait).toBeCloseTo((10 / 190) * 100, 0)
    expect(u.usage).toBeCloseTo((100 / 190) * 100, 0)
  })

  it('reads load, uptime and memory', () => {
    expect(parseLoadavg('0.52 1.25 2.00 3/412 9981\n')).toEqual({ one: 0.52, five: 1.25, fifteen: 2 })
    expect(parseUptime('2341.55 4012.11\n')).toBe(2341.55)
    const mem = memoryFigures(
      parseMeminfo(
        [
          'MemTotal:       16000000 kB',
          'MemFree:         2000000 kB',
          'MemAvailable:    9000000 kB',
          'Buffers:          500000 kB',
          'Cached:          6000000 kB',
          'SReclaimable:     500000 kB',
          'SwapTotal:       4000000 kB',
          'SwapFree:        3000000 kB',
          'HugePages_Total:       0',
        ].join('\n'),
      ),
    )
    expect(mem.totalBytes).toBe(16_000_000 * 1024)
    expect(mem.cachedBytes).toBe(6_500_000 * 1024)
    expect(mem.usedBytes).toBe((16_000_000 - 2_000_000 - 500_000 - 6_500_000) * 1024)
    expect(mem.availableBytes).toBe(9_000_000 * 1024)
    expect(mem.swapUsedBytes).toBe(1_000_000 * 1024)
  })

  it('reads disk counters for whole disks only and network counters per interface', () => {
    const disks = parseDiskstats(fixture('proc-sample/proc/diskstats'), new Set(['vda']))
    expect(disks.map((d) => d.name)).toEqual(['vda'])
    expect(disks[0]!.readSectors).toBe(3379010)
    expect(disks[0]!.writeSectors).toBe(10226576)
    const net = parseNetDev(fixture('proc-sample/proc/net/dev'))
    expect(net.map((n) => n.name)).toEqual(['lo', 'ifb0', 'ifb1', 'eth0'])
    expect(net.find((n) => n.name === 'eth0')).toMatchObject({
      rxBytes: 1341732691,
      rxPackets: 42596,
      txBytes: 4129756,
      txPackets: 29428,
    })
  })

  it('keeps real file systems once per device and unescapes paths', () => {
    const mounts = parseMounts(
      [
        '/dev/sda2 / ext4 rw 0 0',
        'proc /proc proc rw 0 0',
        'tmpfs /run tmpfs rw 0 0',
        '/dev/sda2 /var/lib/docker/containers/x/hosts ext4 rw 0 0',
        '/dev/sdb1 /media/My\\040Disk vfat rw 0 0',
        'nas:/export /mnt/nas nfs4 rw 0 0',
        '/dev/loop3 /snap/core/1 squashfs ro 0 0',
        'overlay /var/lib/docker/overlay2/x/merged overlay rw 0 0',
      ].join('\n'),
    )
    expect(mounts).toEqual([
      { device: '/dev/sda2', mountpoint: '/', type: 'ext4' },
      { device: '/dev/sdb1', mountpoint: '/media/My Disk', type: 'vfat' },
      { device: 'nas:/export', mountpoint: '/mnt/nas', type: 'nfs4' },
    ])
  })

  it('reads temperatures and the page size', () => {
    expect(parseMilliCelsius('47000\n')).toBe(47)
    expect(parseMilliCelsius('45500')).toBe(45.5)
    expect(parseMilliCelsius('')).toBeNull()
    expect(parseMilliCelsius('-274000')).toBeNull()
    expect(
      parsePageSize('00400000-00401000 r-xp 00000000 fd:00 1 /bin/x\nSize: 4 kB\nKernelPageSize:       64 kB\n'),
    ).toBe(65536)
  })

  it('reads a recorded host tree: hwmon sensors with labels, disks without loop devices', async () => {
    const reading = await new HostReader(join(FIXTURES, 'proc-sample')).read()
    expect(reading.temperatures).toEqual([
      { sensor: 'coretemp', label: 'Package id 0', celsius: 47 },
      { sensor: 'coretemp', label: 'Core 0', celsius: 45.5 },
      { sensor: 'nvme', label: 'temp1', celsius: 38.9 },
    ])
    expect(reading.disks.map((d) => d.name).sort()).toEqual(['vda', 'zram0'])
    expect(reading.cpu.length).toBe(3)
    const snap = buildSnapshot(reading, null)
    expect(snap.intervalSeconds).toBe(0)
    expect(snap.disks.every((d) => d.readBytesPerSec === 0 && d.writeBytesPerSec === 0)).toBe(true)
  })
})

describe('process file parsers on recorded samples', () => {
  it('reads /proc/<pid>/stat with spaces and parentheses in the name', () => {
    const line =
      '4242 (my (odd) prog) S 1 4242 4242 0 -1 4194560 500 0 0 0 123 45 0 0 20 0 7 0 987654 12345678 2500 ' +
      '18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n'
    expect(parsePidStat(line)).toEqual({
      pid: 4242,
      comm: 'my (odd) prog',
      cpuTicks: 168,
      threads: 7,
      startTime: 987654,
      rssPages: 2500,
    })
    expect(parsePidStat('garbage')).toBeNull()
    expect(parsePidStat('12 (cut short) S 1 12 12 0')).toBeNull()
  })

  it('reads the effective uid and context switches from status, and io bytes', () => {
    const status =
      'Name:\tsshd\nUid:\t0\t1000\t1000\t1000\nGid:\t0\t0\t0\t0\nvoluntary_ctxt_switches:\t150\nnonvoluntary_ctxt_switches:\t7\n'
    expect(parsePidStatus(status)).toEqual({ uid: 1000, contextSwitches: 157 })
    expect(
      parsePidIo(
        'rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n',
      ),
    ).toEqual({ readBytes: 4096, writeBytes: 8192 })
    expect(parsePidIo('')).toBeNull()
    expect(
      parsePasswd('root:x:0:0:root:/root:/bin/bash\n# comment\nnobody:x:65534:65534::/:/usr/sbin/nologin\n'),
    ).toEqual(
      new Map([
        [0, 'root'],
        [65534, 'nobody'],
      ]),
    )
  })

  it('reads recorded nethogs trace output: the last refresh, pid from the right, KB/s to bytes/s, unknown traffic dropped', () => {
    const traffic = parseNethogs(fixture('nethogs-trace.txt'))
    // Last block: curl/28111 sent 0.282422 received 0.580664; curl/28232 sent 0.154102 received 0.478516; unknown TCP dropped.
    expect([...traffic.keys()].sort()).toEqual([28111, 28232])
    expect(traffic.get(28111)!.outRate).toBeCloseTo(0.282422 * 1024, 3)
    expect(traffic.get(28111)!.inRate).toBeCloseTo(0.580664 * 1024, 3)
    expect(traffic.get(28232)!.inRate).toBeCloseTo(0.478516 * 1024, 3)
    // A program path with slashes, and a block with no processes.
    const paths = parseNethogs(
      'Refreshing:\n/usr/lib/firefox/firefox/3141/1000\t12.5\t100\n\nRefreshing:\n/usr/lib/firefox/firefox/3141/1000\t2\t4\n',
    )
    expect(paths.get(3141)).toEqual({ outRate: 2048, inRate: 4096 })
    expect(parseNethogs('Adding local address: 10.0.0.1\n').size).toBe(0)
  })
})

describe('parsers on the real /proc of this machine', () => {
  const real = (p: string) => readFileSync(p, 'utf8')

  it('finds every core and the machine total memory', () => {
    const cpu = parseProcStat(real('/proc/stat'))
    expect(cpu.filter((c) => c.id >= 0).length).toBe(cpus().length)
    expect(parseMeminfo(real('/proc/meminfo')).MemTotal).toBe(totalmem())
    expect(parseNetDev(real('/proc/net/dev')).map((n) => n.name)).toContain('lo')
    expect(parseMounts(real('/proc/self/mounts')).length).toBeGreaterThan(0)
    expect(parseUptime(real('/proc/uptime'))).toBeGreaterThan(0)
  })

  it('reads this process: pid, uid, threads, io', () => {
    const stat = parsePidStat(real('/proc/self/stat'))!
    expect(stat.pid).toBe(process.pid)
    expect(stat.threads).toBeGreaterThan(0)
    expect(stat.rssPages).toBeGreaterThan(0)
    expect(parsePidStatus(real('/proc/self/status'))!.uid).toBe(process.geteuid!())
    expect(parsePidIo(real('/proc/self/io'))).not.toBeNull()
  })

  it('reads the real host twice and derives non-negative rates', async () => {
    const reader = new HostReader()
    const a = await reader.read()
    await new Promise((r) => setTimeout(r, 300))
    const b = await reader.read()
    const s = buildSnapshot(b, a)
    expect(s.intervalSeconds).toBeGreaterThan(0.2)
    expect(s.cpu.cores.length).toBe(cpus().length)
    expect(s.memory.totalBytes).toBe(totalmem())
    expect(s.filesystems.some((f) => f.mountpoint === '/')).toBe(true)
    for (const d of s.disks)
      expect(Math.min(d.readBytesPerSec, d.writeBytesPerSec, d.readsPerSec, d.writesPerSec)).toBeGreaterThanOrEqual(0)
    for (const n of s.network)
      expect(Math.min(n.rxBytesPerSec, n.txBytesPerSec, n.rxPacketsPerSec, n.txPacketsPerSec)).toBeGreaterThanOrEqual(0)
    expect(s.cpu.usage).toBeGreaterThanOrEqual(0)
    expect(s.cpu.usage).toBeLessThanOrEqual(100)
  })
})

describe('Prometheus text', () => {
  it('escapes label values and writes counters and gauges with HELP and TYPE', async () => {
    expect(formatLabels({ mountpoint: '/media/a "b"\\c' })).toBe('{mountpoint="/media/a \\"b\\"\\\\c"}')
    const text = prometheusText(await new HostReader(join(FIXTURES, 'proc-sample')).read())
    expect(text).toContain('# TYPE hostd_cpu_seconds_total counter')
    expect(text).toMatch(/^hostd_disk_read_bytes_total\{device="vda"\} 1730053120$/m) // 3379010 sectors * 512
    expect(text).toMatch(/^hostd_temperature_celsius\{sensor="coretemp",label="Package id 0"\} 47$/m)
    for (const line of text.trim().split('\n')) expect(line).toMatch(/^(# (HELP|TYPE) \w+ .+|\w+(\{.*\})? -?[\d.e+]+)$/)
  })
})

describe('processName and commandLine (/proc/<pid>/cmdline)', () => {
  it.each([
    ['/usr/bin/python3\0-m\0http.server\0', 'MainThread', 'python3'],
    ['/usr/lib/chromium/chromium --type=renderer --lang=en\0', 'ThreadPoolForeg', 'chromium'],
    ['nginx: worker process\0\0\0', 'nginx', 'nginx: worker process'],
    ['sshd: alice@pts/0\0', 'sshd', 'sshd: alice@pts/0'],
    ['node\0server.js\0', 'node-MainThread', 'node'],
    ['./run.sh\0', 'run.sh', 'run.sh'],
    ['', 'kworker/0:1-events', 'kworker/0:1-events'],
  ])('%j (comm %s) is %s', (cmdline, comm, name) => {
    expect(processName(cmdline, comm)).toBe(name)
  })
  it('joins the arguments with spaces, without the trailing NUL', () => {
    expect(commandLine('/usr/bin/python3\0-m\0http.server\0')).toBe('/usr/bin/python3 -m http.server')
    expect(commandLine(null)).toBe('')
  })
})
