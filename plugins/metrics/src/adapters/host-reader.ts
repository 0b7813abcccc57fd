import { readdirSync } from 'node:fs'
import { statfs } from 'node:fs/promises'
import { join } from 'node:path'
import { readProcFile } from './proc-files.ts'
import {
  isReportedDisk,
  memoryFigures,
  parseDiskstats,
  parseLoadavg,
  parseMeminfo,
  parseMilliCelsius,
  parseMounts,
  parseNetDev,
  parseProcStat,
  parseUptime,
  type CpuTimes,
  type DiskCounters,
  type MemoryFigures,
  type NetCounters,
} from './procfs-parse.ts'

export interface FilesystemUsage {
  device: string
  mountpoint: string
  type: string
  sizeBytes: number
  usedBytes: number
  availableBytes: number
}

export interface Temperature {
  sensor: string
  label: string
  celsius: number
}

/** One reading of the host's counters and gauges. Rates come from two readings (see snapshot.ts). */
export interface HostReading {
  /** Wall-clock time (ms since epoch). */
  at: number
  /** Monotonic time (ms), for intervals that survive clock changes. */
  mono: number
  cpu: CpuTimes[]
  load: { one: number; five: number; fifteen: number }
  memory: MemoryFigures
  uptimeSeconds: number
  disks: DiskCounters[]
  net: NetCounters[]
  filesystems: FilesystemUsage[]
  temperatures: Temperature[]
}

interface SensorFile {
  sensor: string
  label: string
  path: string
}

const DISCOVERY_TTL_MS = 60_000
const STATFS_DEADLINE_MS = 1000

/**
 * Reads /proc and /sys directly: no child process, no systeminformation. The lists that rarely change
 * (block devices, temperature sensor files) are discovered once a minute; everything else is read each time.
 */
export class HostReader {
  readonly #root: string
  readonly #clock: () => number
  #disks: { at: number; names: Set<string> } | null = null
  #sensors: { at: number; files: SensorFile[] } | null = null

  /** `root` is `/` on a real host; tests may point it at a recorded tree and step a clock of their own. */
  constructor(root = '/', clock: () => number = () => performance.now()) {
    this.#root = root
    this.#clock = clock
  }

  async read(): Promise<HostReading> {
    const file = (p: string) => readProcFile(join(this.#root, p)) ?? ''
    const mono = this.#clock()
    return {
      at: Date.now(),
      mono,
      cpu: parseProcStat(file('proc/stat')),
      load: parseLoadavg(file('proc/loadavg')),
      memory: memoryFigures(parseMeminfo(file('proc/meminfo'))),
      uptimeSeconds: parseUptime(file('proc/uptime')),
      disks: parseDiskstats(file('proc/diskstats'), this.#diskNames(mono)),
      net: parseNetDev(file('proc/net/dev')),
      filesystems: await this.#filesystems(file('proc/self/mounts')),
      temperatures: this.#temperatures(mono),
    }
  }

  #diskNames(now: number): Set<string> {
    if (!this.#disks || now - this.#disks.at > DISCOVERY_TTL_MS) {
      let names: string[] = []
      try {
        names = readdirSync(join(this.#root, 'sys/block')).filter(isReportedDisk)
      } catch {
        /* no /sys/block: report nothing */
      }
      this.#disks = { at: now, names: new Set(names) }
    }
    return this.#disks.names
  }

  /** statfs runs in the thread pool with a deadline: a dead network share is skipped, never hangs a sample. */
  async #filesystems(mounts: string): Promise<FilesystemUsage[]> {
    const results = await Promise.all(
      parseMounts(mounts).map(async (m): Promise<FilesystemUsage | null> => {
        let timer: NodeJS.Timeout | undefined
        try {
          const late = new Promise<null>((resolve) => (timer = setTimeout(resolve, STATFS_DEADLINE_MS, null)))
          const s = await Promise.race([statfs(m.mountpoint), late])
          if (!s) return null
          const size = s.blocks * s.bsize
          if (size === 0) return null
          // Used as df computes it: blocks minus free blocks; available is what an unprivileged user may still use.
          return {
            ...m,
            sizeBytes: size,
            usedBytes: (s.blocks - s.bfree) * s.bsize,
            availableBytes: s.bavail * s.bsize,
          }
        } catch {
          return null // a mount that went away
        } finally {
          clearTimeout(timer)
        }
      }),
    )
    return results.filter((r): r is FilesystemUsage => r !== null)
  }

  #temperatures(now: number): Temperature[] {
    if (!this.#sensors || now - this.#sensors.at > DISCOVERY_TTL_MS)
      this.#sensors = { at: now, files: this.#discoverSensors() }
    const out: Temperature[] = []
    for (const s of this.#sensors.files) {
      const c = parseMilliCelsius(readProcFile(s.path) ?? '')
      if (c !== null) out.push({ sensor: s.sensor, label: s.label, celsius: c })
    }
    return out
  }

  /** hwmon sensors (named, labelled); thermal zones only when the host has no hwmon temperatures. */
  #discoverSensors(): SensorFile[] {
    const files: SensorFile[] = []
    const list = (dir: string) => {
      try {
        return readdirSync(join(this.#root, dir)).sort()
      } catch {
        return []
      }
    }
    for (const hw of list('sys/class/hwmon')) {
      const dir = join(this.#root, 'sys/class/hwmon', hw)
      const sensor = (readProcFile(join(dir, 'name')) ?? hw).trim()
      for (const f of list(join('sys/class/hwmon', hw))) {
        const m = /^temp(\d+)_input$/.exec(f)
        if (!m) continue
        const label = (readProcFile(join(dir, `temp${m[1]}_label`)) ?? `temp${m[1]}`).trim()
        files.push({ sensor, label, path: join(dir, f) })
      }
    }
    if (files.length > 0) return files
    for (const zone of list('sys/class/thermal')) {
      if (!zone.startsWith('thermal_zone')) continue
      const dir = join(this.#root, 'sys/class/thermal', zone)
      const type = (readProcFile(join(dir, 'type')) ?? zone).trim()
      files.push({ sensor: zone, label: type, path: join(dir, 'temp') })
    }
    return files
  }
}
