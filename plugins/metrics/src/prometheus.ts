import type { HostReading } from './adapters/host-reader.ts'
import { CLOCK_TICKS } from './adapters/process-table.ts'

/**
 * Prometheus text exposition (format 0.0.4) of one host reading. Counters are exported raw (cumulative since
 * boot, `_total`), so Prometheus computes rates itself over any window; gauges as they are. Names follow
 * node_exporter's where one exists, prefixed `hostd_`.
 */
export function prometheusText(r: HostReading): string {
  const out: string[] = []
  const family = (
    name: string,
    type: 'gauge' | 'counter',
    help: string,
    samples: [Record<string, string>, number][],
  ) => {
    if (samples.length === 0) return
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`)
    for (const [labels, value] of samples) out.push(`${name}${formatLabels(labels)} ${formatValue(value)}`)
  }
  const modes = ['user', 'nice', 'system', 'idle', 'iowait', 'irq', 'softirq', 'steal'] as const
  family(
    'hostd_cpu_seconds_total',
    'counter',
    'Seconds the CPUs spent in each mode.',
    r.cpu
      .filter((c) => c.id >= 0)
      .flatMap((c) =>
        modes.map((m): [Record<string, string>, number] => [{ cpu: String(c.id), mode: m }, c[m] / CLOCK_TICKS]),
      ),
  )
  family('hostd_load1', 'gauge', '1-minute load average.', [[{}, r.load.one]])
  family('hostd_load5', 'gauge', '5-minute load average.', [[{}, r.load.five]])
  family('hostd_load15', 'gauge', '15-minute load average.', [[{}, r.load.fifteen]])
  const m = r.memory
  family('hostd_memory_total_bytes', 'gauge', 'Physical memory.', [[{}, m.totalBytes]])
  family('hostd_memory_used_bytes', 'gauge', 'Memory in use (total - free - buffers - cache).', [[{}, m.usedBytes]])
  family('hostd_memory_available_bytes', 'gauge', 'Memory available for new work without swapping.', [
    [{}, m.availableBytes],
  ])
  family('hostd_memory_cached_bytes', 'gauge', 'Page cache and reclaimable slab.', [[{}, m.cachedBytes]])
  family('hostd_memory_buffers_bytes', 'gauge', 'Block device buffers.', [[{}, m.buffersBytes]])
  family('hostd_swap_total_bytes', 'gauge', 'Swap space.', [[{}, m.swapTotalBytes]])
  family('hostd_swap_used_bytes', 'gauge', 'Swap in use.', [[{}, m.swapUsedBytes]])
  family('hostd_uptime_seconds', 'gauge', 'Seconds since boot.', [[{}, r.uptimeSeconds]])
  const fsLabels = (f: HostReading['filesystems'][number]) => ({
    device: f.device,
    mountpoint: f.mountpoint,
    fstype: f.type,
  })
  family(
    'hostd_filesystem_size_bytes',
    'gauge',
    'File system size.',
    r.filesystems.map((f) => [fsLabels(f), f.sizeBytes]),
  )
  family(
    'hostd_filesystem_used_bytes',
    'gauge',
    'File system space in use.',
    r.filesystems.map((f) => [fsLabels(f), f.usedBytes]),
  )
  family(
    'hostd_filesystem_avail_bytes',
    'gauge',
    'File system space available to unprivileged users.',
    r.filesystems.map((f) => [fsLabels(f), f.availableBytes]),
  )
  family(
    'hostd_disk_read_bytes_total',
    'counter',
    'Bytes read from the block device.',
    r.disks.map((d) => [{ device: d.name }, d.readSectors * 512]),
  )
  family(
    'hostd_disk_written_bytes_total',
    'counter',
    'Bytes written to the block device.',
    r.disks.map((d) => [{ device: d.name }, d.writeSectors * 512]),
  )
  family(
    'hostd_disk_reads_completed_total',
    'counter',
    'Reads completed.',
    r.disks.map((d) => [{ device: d.name }, d.reads]),
  )
  family(
    'hostd_disk_writes_completed_total',
    'counter',
    'Writes completed.',
    r.disks.map((d) => [{ device: d.name }, d.writes]),
  )
  family(
    'hostd_network_receive_bytes_total',
    'counter',
    'Bytes received.',
    r.net.map((n) => [{ device: n.name }, n.rxBytes]),
  )
  family(
    'hostd_network_transmit_bytes_total',
    'counter',
    'Bytes sent.',
    r.net.map((n) => [{ device: n.name }, n.txBytes]),
  )
  family(
    'hostd_network_receive_packets_total',
    'counter',
    'Packets received.',
    r.net.map((n) => [{ device: n.name }, n.rxPackets]),
  )
  family(
    'hostd_network_transmit_packets_total',
    'counter',
    'Packets sent.',
    r.net.map((n) => [{ device: n.name }, n.txPackets]),
  )
  family(
    'hostd_temperature_celsius',
    'gauge',
    'Temperature sensors.',
    r.temperatures.map((t) => [{ sensor: t.sensor, label: t.label }, t.celsius]),
  )
  return `${out.join('\n')}\n`
}

/** Label values escape backslash, double quote and newline, as the format requires. */
export function formatLabels(labels: Record<string, string>): string {
  const parts = Object.entries(labels).map(
    ([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`,
  )
  return parts.length ? `{${parts.join(',')}}` : ''
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN'
  if (v === Infinity) return '+Inf'
  if (v === -Infinity) return '-Inf'
  return String(v)
}
