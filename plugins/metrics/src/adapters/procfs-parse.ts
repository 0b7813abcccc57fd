/**
 * Pure parsers for the host-wide /proc and /sys files. Each takes the file's text and returns plain data,
 * so they are tested on recorded samples and on this machine's real files alike.
 */

/** Cumulative CPU times in clock ticks, from one `cpu`/`cpuN` line of /proc/stat. */
export interface CpuTimes {
  /** -1 for the aggregate `cpu` line, N for `cpuN`. */
  id: number
  user: number
  nice: number
  system: number
  idle: number
  iowait: number
  irq: number
  softirq: number
  steal: number
}

/** /proc/stat: the aggregate line first, then one entry per core. */
export function parseProcStat(text: string): CpuTimes[] {
  const out: CpuTimes[] = []
  for (const line of text.split('\n')) {
    if (!line.startsWith('cpu')) continue
    const parts = line.trim().split(/\s+/)
    const label = parts[0]!
    const id = label === 'cpu' ? -1 : Number(label.slice(3))
    if (!Number.isInteger(id)) continue
    const n = (i: number) => Number(parts[i] ?? 0) || 0
    out.push({
      id,
      user: n(1),
      nice: n(2),
      system: n(3),
      idle: n(4),
      iowait: n(5),
      irq: n(6),
      softirq: n(7),
      steal: n(8),
    })
  }
  return out
}

/** /proc/loadavg: the 1, 5 and 15 minute load averages. */
export function parseLoadavg(text: string): { one: number; five: number; fifteen: number } {
  const [one, five, fifteen] = text.trim().split(/\s+/).map(Number)
  return { one: one ?? 0, five: five ?? 0, fifteen: fifteen ?? 0 }
}

/** /proc/uptime: seconds since boot. */
export function parseUptime(text: string): number {
  return Number(text.trim().split(/\s+/)[0]) || 0
}

/** /proc/meminfo as bytes, keyed by the file's own names (MemTotal, MemAvailable, Cached, ...). */
export function parseMeminfo(text: string): Record<string, number> {
  const out: Record<string, number> = {}
  for (const line of text.split('\n')) {
    const m = /^([\w()]+):\s+(\d+)(?:\s+kB)?/.exec(line)
    if (m) out[m[1]!] = Number(m[2]) * (line.endsWith('kB') ? 1024 : 1)
  }
  return out
}

export interface MemoryFigures {
  totalBytes: number
  usedBytes: number
  freeBytes: number
  availableBytes: number
  buffersBytes: number
  cachedBytes: number
  swapTotalBytes: number
  swapUsedBytes: number
  swapFreeBytes: number
}

/** Used memory as `free` computes it: total - free - buffers - cache (page cache + reclaimable slab). */
export function memoryFigures(info: Record<string, number>): MemoryFigures {
  const total = info.MemTotal ?? 0
  const free = info.MemFree ?? 0
  const buffers = info.Buffers ?? 0
  const cached = (info.Cached ?? 0) + (info.SReclaimable ?? 0)
  const available = info.MemAvailable ?? free + buffers + cached
  const used = Math.max(0, total - free - buffers - cached)
  const swapTotal = info.SwapTotal ?? 0
  const swapFree = info.SwapFree ?? 0
  return {
    totalBytes: total,
    usedBytes: used,
    freeBytes: free,
    availableBytes: available,
    buffersBytes: buffers,
    cachedBytes: cached,
    swapTotalBytes: swapTotal,
    swapUsedBytes: Math.max(0, swapTotal - swapFree),
    swapFreeBytes: swapFree,
  }
}

export interface DiskCounters {
  name: string
  reads: number
  readSectors: number
  writes: number
  writeSectors: number
}

/** /proc/diskstats, only for the names in `wanted` (whole disks; partitions would count twice). */
export function parseDiskstats(text: string, wanted: ReadonlySet<string> | null): DiskCounters[] {
  const out: DiskCounters[] = []
  for (const line of text.split('\n')) {
    const p = line.trim().split(/\s+/)
    if (p.length < 10) continue
    const name = p[2]!
    if (wanted && !wanted.has(name)) continue
    // Fields after the name: reads, reads merged, sectors read, ms reading, writes, writes merged, sectors written, ...
    out.push({ name, reads: Number(p[3]), readSectors: Number(p[5]), writes: Number(p[7]), writeSectors: Number(p[9]) })
  }
  return out
}

/** Block devices worth reporting: everything in /sys/block but loop and RAM disks. */
export function isReportedDisk(name: string): boolean {
  return !/^(loop|ram)\d+$/.test(name)
}

export interface NetCounters {
  name: string
  rxBytes: number
  rxPackets: number
  txBytes: number
  txPackets: number
}

/** /proc/net/dev: per interface byte and packet counters. */
export function parseNetDev(text: string): NetCounters[] {
  const out: NetCounters[] = []
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':')
    if (colon < 0 || line.includes('|')) continue
    const name = line.slice(0, colon).trim()
    const p = line
      .slice(colon + 1)
      .trim()
      .split(/\s+/)
      .map(Number)
    if (p.length < 10 || !name) continue
    out.push({ name, rxBytes: p[0]!, rxPackets: p[1]!, txBytes: p[8]!, txPackets: p[9]! })
  }
  return out
}

export interface MountEntry {
  device: string
  mountpoint: string
  type: string
}

/** Pseudo and virtual file systems that hold no user data. */
const PSEUDO_FS = new Set([
  'proc',
  'sysfs',
  'devtmpfs',
  'devpts',
  'tmpfs',
  'ramfs',
  'cgroup',
  'cgroup2',
  'pstore',
  'bpf',
  'securityfs',
  'debugfs',
  'tracefs',
  'mqueue',
  'hugetlbfs',
  'configfs',
  'fusectl',
  'autofs',
  'binfmt_misc',
  'nsfs',
  'rpc_pipefs',
  'efivarfs',
  'squashfs',
  'selinuxfs',
  'fuse.lxcfs',
  'fuse.gvfsd-fuse',
  'fuse.portal',
  'overlay',
  'nfsd',
])
const NETWORK_FS = new Set(['nfs', 'nfs4', 'cifs', 'smb3', 'fuse.sshfs', 'virtiofs', '9p', 'ceph', 'glusterfs'])

/** `\040` and friends in /proc/mounts are octal escapes (spaces, tabs, newlines, backslashes in paths). */
function unescapeMount(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)))
}

/**
 * /proc/mounts reduced to the file systems a person cares about: block devices and network shares, one entry
 * per device (bind mounts repeat a device; the shortest mount point wins), never pseudo file systems.
 */
export function parseMounts(text: string): MountEntry[] {
  const byDevice = new Map<string, MountEntry>()
  for (const line of text.split('\n')) {
    const p = line.split(' ')
    if (p.length < 3) continue
    const device = unescapeMount(p[0]!)
    const mountpoint = unescapeMount(p[1]!)
    const type = p[2]!
    if (PSEUDO_FS.has(type)) continue
    if (!device.startsWith('/') && !NETWORK_FS.has(type) && !device.includes(':')) continue
    if (device.startsWith('/dev/loop')) continue
    const seen = byDevice.get(device)
    if (!seen || mountpoint.length < seen.mountpoint.length) byDevice.set(device, { device, mountpoint, type })
  }
  return [...byDevice.values()].sort((a, b) => a.mountpoint.localeCompare(b.mountpoint))
}

/** Millidegrees (hwmon temp*_input, thermal_zone temp) to degrees Celsius; null for nonsense values. */
export function parseMilliCelsius(text: string): number | null {
  const v = Number(text.trim())
  if (!Number.isFinite(v) || text.trim() === '') return null
  const c = v / 1000
  return c > -100 && c < 250 ? Math.round(c * 10) / 10 : null
}

/** The kernel's page size in bytes from the first KernelPageSize line of /proc/self/smaps. */
export function parsePageSize(smapsHead: string): number {
  const m = /KernelPageSize:\s+(\d+)\s+kB/.exec(smapsHead)
  return m ? Number(m[1]) * 1024 : 4096
}
