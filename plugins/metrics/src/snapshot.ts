import type { HostReading } from './adapters/host-reader.ts'
import type { CpuTimes } from './adapters/procfs-parse.ts'
import type { CpuUsage, HistoryPoint, MetricsSnapshot } from './schemas.ts'

/** Bytes per sector in /proc/diskstats: always 512, whatever the device's real sector size. */
const SECTOR_BYTES = 512

const round1 = (v: number) => Math.round(v * 10) / 10
const rate = (now: number, before: number | undefined, seconds: number) =>
  before === undefined || seconds <= 0 || now < before ? 0 : (now - before) / seconds // a reset counter reads 0, not negative

/** Shares of CPU time between two readings of one cpu line, in percent. */
export function cpuUsage(now: CpuTimes, before: CpuTimes | undefined): CpuUsage {
  const d = (k: keyof CpuTimes) => Math.max(0, now[k] - (before?.[k] ?? 0))
  const user = d('user') + d('nice')
  const system = d('system') + d('irq') + d('softirq')
  const iowait = d('iowait')
  const steal = d('steal')
  const idle = d('idle')
  const total = user + system + iowait + steal + idle
  if (total === 0) return { usage: 0, user: 0, system: 0, iowait: 0, steal: 0, idle: 100 }
  const pct = (v: number) => round1((v / total) * 100)
  return {
    usage: pct(user + system + steal),
    user: pct(user),
    system: pct(system),
    iowait: pct(iowait),
    steal: pct(steal),
    idle: pct(idle),
  }
}

/**
 * The snapshot: gauges from `now`, rates (CPU shares, disk and network per second) over `now - before`.
 * Without `before`, CPU shares are since boot and rates are zero.
 */
export function buildSnapshot(now: HostReading, before: HostReading | null): MetricsSnapshot {
  const seconds = before ? (now.mono - before.mono) / 1000 : 0
  const cpuBefore = new Map((before?.cpu ?? []).map((c) => [c.id, c]))
  const total = now.cpu.find((c) => c.id === -1)
  const disksBefore = new Map((before?.disks ?? []).map((d) => [d.name, d]))
  const netBefore = new Map((before?.net ?? []).map((n) => [n.name, n]))
  return {
    sampledAt: new Date(now.at).toISOString(),
    intervalSeconds: Math.round(seconds * 100) / 100,
    uptimeSeconds: Math.floor(now.uptimeSeconds),
    load: now.load,
    cpu: {
      ...(total
        ? cpuUsage(total, cpuBefore.get(-1))
        : cpuUsage(
            { id: -1, user: 0, nice: 0, system: 0, idle: 0, iowait: 0, irq: 0, softirq: 0, steal: 0 },
            undefined,
          )),
      cores: now.cpu.filter((c) => c.id >= 0).map((c) => ({ core: c.id, ...cpuUsage(c, cpuBefore.get(c.id)) })),
    },
    memory: now.memory,
    filesystems: now.filesystems.map((f) => ({
      ...f,
      usedPercent: round1((f.usedBytes / Math.max(1, f.usedBytes + f.availableBytes)) * 100),
    })),
    disks: now.disks.map((d) => {
      const b = before ? disksBefore.get(d.name) : undefined
      return {
        name: d.name,
        readBytesPerSec: Math.round(rate(d.readSectors, b?.readSectors, seconds) * SECTOR_BYTES),
        writeBytesPerSec: Math.round(rate(d.writeSectors, b?.writeSectors, seconds) * SECTOR_BYTES),
        readsPerSec: round1(rate(d.reads, b?.reads, seconds)),
        writesPerSec: round1(rate(d.writes, b?.writes, seconds)),
      }
    }),
    network: now.net.map((n) => {
      const b = before ? netBefore.get(n.name) : undefined
      return {
        name: n.name,
        rxBytesPerSec: Math.round(rate(n.rxBytes, b?.rxBytes, seconds)),
        txBytesPerSec: Math.round(rate(n.txBytes, b?.txBytes, seconds)),
        rxPacketsPerSec: round1(rate(n.rxPackets, b?.rxPackets, seconds)),
        txPacketsPerSec: round1(rate(n.txPackets, b?.txPackets, seconds)),
      }
    }),
    temperatures: now.temperatures,
  }
}

/** The compact figures kept in history: totals over devices and interfaces (loopback left out of network). */
export function historyPoint(s: MetricsSnapshot): HistoryPoint {
  const net = s.network.filter((n) => n.name !== 'lo')
  const sum = <T>(list: T[], f: (v: T) => number) => list.reduce((a, v) => a + f(v), 0)
  return {
    t: s.sampledAt,
    cpu: s.cpu.usage,
    iowait: s.cpu.iowait,
    load1: s.load.one,
    memUsedBytes: s.memory.usedBytes,
    memTotalBytes: s.memory.totalBytes,
    swapUsedBytes: s.memory.swapUsedBytes,
    diskReadBytesPerSec: sum(s.disks, (d) => d.readBytesPerSec),
    diskWriteBytesPerSec: sum(s.disks, (d) => d.writeBytesPerSec),
    netRxBytesPerSec: sum(net, (n) => n.rxBytesPerSec),
    netTxBytesPerSec: sum(net, (n) => n.txBytesPerSec),
    maxTempCelsius: s.temperatures.length ? Math.max(...s.temperatures.map((t) => t.celsius)) : null,
  }
}
