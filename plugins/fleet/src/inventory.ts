/**
 * What a member tells the fleet about itself with each heartbeat: CPU (busy share since the previous reading, from
 * /proc/stat), memory, the root file system, firing alerts (the alerts plugin's badge, when it runs) and updates
 * waiting (the packages plugin's service, when it runs). Cheap reads only: a missing source is null.
 */
import { readFile, statfs } from 'node:fs/promises'
import { freemem, totalmem } from 'node:os'
import type { OptionalServices } from '@hostd/sdk'
import { packageUpdates, type RemoteDispatch } from './tokens.ts'

export interface Inventory {
  /** Busy share of all CPUs, 0..1, since the previous reading (null at the first). */
  cpu: number | null
  memory: { used: number; total: number }
  disk: { used: number; total: number } | null
  /** Firing alerts, or null without the alerts plugin. */
  alerts: number | null
  /** Packages waiting for an upgrade, or null without the packages plugin. */
  updates: number | null
  /** Internal: the CPU counters of this reading. */
  ticks?: { busy: number; total: number }
}

async function cpuTicks(): Promise<{ busy: number; total: number } | null> {
  try {
    const line = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0]!
    const values = line.trim().split(/\s+/).slice(1).map(Number)
    const total = values.reduce((a, b) => a + b, 0)
    const idle = (values[3] ?? 0) + (values[4] ?? 0)
    return { busy: total - idle, total }
  } catch {
    return null
  }
}

let updatesCache: { count: number | null; at: number } = { count: null, at: 0 }

export async function readInventory(
  d: { optional: OptionalServices; dispatch: RemoteDispatch },
  self: string,
  previous: Inventory | null,
): Promise<Inventory> {
  const ticks = await cpuTicks()
  let cpu: number | null = null
  if (ticks && previous?.ticks && ticks.total > previous.ticks.total)
    cpu = Math.round(((ticks.busy - previous.ticks.busy) / (ticks.total - previous.ticks.total)) * 1000) / 1000
  const total = totalmem()
  let disk: Inventory['disk'] = null
  try {
    const s = await statfs('/')
    disk = { used: (s.blocks - s.bfree) * s.bsize, total: s.blocks * s.bsize }
  } catch {
    /* none */
  }
  return {
    cpu,
    memory: { used: total - freemem(), total },
    disk,
    alerts: await firingAlerts(d.dispatch, self),
    updates: waitingUpdates(d.optional),
    ...(ticks ? { ticks } : {}),
  }
}

async function firingAlerts(dispatch: RemoteDispatch, self: string): Promise<number | null> {
  try {
    const res = await dispatch.dispatch({
      method: 'GET',
      url: '/api/alerts/badge',
      identity: { userId: 'fleet', username: 'fleet-inventory', role: 'viewer', origin: self },
    })
    const chunks: Buffer[] = []
    for await (const chunk of res.body) chunks.push(chunk as Buffer)
    if (res.status !== 200) return null
    const count = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { count?: unknown }).count
    return typeof count === 'number' ? count : null
  } catch {
    return null
  }
}

/** The packages plugin's count, read at most every 10 minutes in the background (its first read takes a second). */
function waitingUpdates(optional: OptionalServices): number | null {
  const now = Date.now()
  if (now - updatesCache.at > 600_000) {
    updatesCache = { ...updatesCache, at: now }
    const service = optional.get(packageUpdates)
    if (!service) updatesCache = { count: null, at: now }
    else
      void service
        .upgradable()
        .then((u) => (updatesCache = { count: u.count, at: now }))
        .catch(() => {})
  }
  return updatesCache.count
}
