import { stat } from 'node:fs/promises'
import { readText } from './read.ts'

const ZONEINFO = '/usr/share/zoneinfo'
let cached: { mtimeMs: number; zones: string[] } | null = null

/**
 * Every time zone name the system knows, sorted, as `timedatectl list-timezones` lists them but without systemd:
 * the zones ("Z") and links ("L", e.g. US/Eastern) of tzdata's own index, `tzdata.zi`; on a system without it, the
 * zones of `zone1970.tab` / `zone.tab`. UTC is always there. Read once, again only when tzdata is updated.
 */
export async function listTimeZones(dir = ZONEINFO): Promise<string[]> {
  const mtimeMs = await stat(`${dir}/tzdata.zi`).then(
    (s) => s.mtimeMs,
    () => -1,
  )
  if (cached?.mtimeMs === mtimeMs && dir === ZONEINFO) return cached.zones
  const names = new Set<string>(['UTC'])
  const index = await readText(`${dir}/tzdata.zi`)
  if (index) {
    for (const line of index.split('\n')) {
      if (line.startsWith('Z ')) names.add(line.split(' ', 3)[1]!)
      else if (line.startsWith('L ')) names.add(line.split(' ', 4)[2]!)
    }
  } else {
    const tab = (await readText(`${dir}/zone1970.tab`)) ?? (await readText(`${dir}/zone.tab`)) ?? ''
    for (const line of tab.split('\n')) {
      const zone = line.startsWith('#') ? undefined : line.split('\t')[2]
      if (zone) names.add(zone.trim())
    }
  }
  const zones = [...names].filter((z) => /^[A-Za-z0-9_+-]+(\/[A-Za-z0-9_+-]+){0,2}$/.test(z)).sort()
  if (dir === ZONEINFO) cached = { mtimeMs, zones }
  return zones
}
