import { arch, cpus, release, version } from 'node:os'
import { parseKeyValues, readText } from './read.ts'
import type { SystemInfo } from '../schemas.ts'

function meminfoBytes(meminfo: string, key: string): number | null {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(meminfo)
  return m ? Number(m[1]) * 1024 : null
}

/** Hardware and OS facts, read from /proc, /sys and /etc. */
export async function readSystemInfo(): Promise<SystemInfo> {
  const [osRelease, hostname, cpuinfo, meminfo, uptime, vendor, product, machineId] = await Promise.all([
    readText('/etc/os-release'),
    readText('/proc/sys/kernel/hostname'),
    readText('/proc/cpuinfo'),
    readText('/proc/meminfo'),
    readText('/proc/uptime'),
    readText('/sys/class/dmi/id/sys_vendor'),
    readText('/sys/class/dmi/id/product_name'),
    readText('/etc/machine-id'),
  ])
  const os = parseKeyValues(osRelease)
  const models = [...(cpuinfo ?? '').matchAll(/^model name\s*:\s*(.+)$/gm)].map((m) => m[1]!.trim())
  const physical = new Set([...(cpuinfo ?? '').matchAll(/^core id\s*:\s*(\d+)$/gm)].map((m) => m[1]))
  const uptimeSeconds = Math.floor(Number((uptime ?? '0').split(' ')[0]))
  return {
    hostname: (hostname ?? '').trim(),
    os: {
      name: os.NAME ?? 'Linux',
      prettyName: os.PRETTY_NAME ?? os.NAME ?? 'Linux',
      id: os.ID ?? 'linux',
      version: os.VERSION_ID ?? '',
    },
    kernel: { release: release(), version: version() },
    arch: arch(),
    cpu: {
      model: models[0] ?? cpus()[0]?.model ?? 'unknown',
      threads: cpus().length,
      cores: physical.size || cpus().length,
    },
    memory: {
      totalBytes: meminfoBytes(meminfo ?? '', 'MemTotal') ?? 0,
      availableBytes: meminfoBytes(meminfo ?? '', 'MemAvailable') ?? 0,
    },
    hardware: { vendor: vendor?.trim() || null, product: product?.trim() || null },
    machineId: machineId?.trim() || null,
    uptimeSeconds,
    bootTime: new Date(Date.now() - uptimeSeconds * 1000).toISOString(),
  }
}
