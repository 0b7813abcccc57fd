import { CLOCK_TICKS, type ProcessSweep } from './adapters/process-table.ts'
import type { NetTraffic } from './adapters/process-parse.ts'
import type { ProcessEntry, ProcessSample } from './schemas.ts'

const round2 = (v: number) => Math.round(v * 100) / 100

/**
 * Turns a sweep into the Process sample, with rates against the previous sweep:
 *  - no previous sweep (first call after start): every rate is 0;
 *  - a process seen before: (now - before) / interval;
 *  - a process new since the previous sweep (pid and start time not seen): it started inside the interval,
 *    so all of its counters were earned inside it: counters / interval.
 * A counter that went backwards (cannot happen for one process; guards pid reuse) reads 0.
 */
export function processSample(
  now: ProcessSweep,
  before: ProcessSweep | null,
  net: Map<number, NetTraffic> | null,
): ProcessSample {
  const seconds = before ? (now.mono - before.mono) / 1000 : 0
  const previous = new Map(before?.processes.map((p) => [p.key, p]) ?? [])
  const rate = (cur: number, old: number) => (seconds > 0 && cur >= old ? (cur - old) / seconds : 0)
  const processes: ProcessEntry[] = now.processes.map((p) => {
    const b = previous.get(p.key)
    const traffic = net?.get(p.pid)
    return {
      pid: p.pid,
      name: p.name,
      command: p.command,
      user: p.user,
      cpu: round2((rate(p.cpuTicks, b?.cpuTicks ?? 0) / CLOCK_TICKS) * 100),
      memory: now.memTotalBytes > 0 ? round2((p.rssBytes / now.memTotalBytes) * 100) : 0,
      threads: p.threads,
      diskReadRate: Math.round(rate(p.readBytes, b?.readBytes ?? 0)),
      diskWriteRate: Math.round(rate(p.writeBytes, b?.writeBytes ?? 0)),
      netInRate: Math.round(traffic?.inRate ?? 0),
      netOutRate: Math.round(traffic?.outRate ?? 0),
      wakeupsRate: round2(rate(p.contextSwitches, b?.contextSwitches ?? 0)),
    }
  })
  return { sampledAt: new Date(now.at).toISOString(), processes }
}
