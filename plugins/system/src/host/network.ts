import { networkInterfaces } from 'node:os'
import { readdir } from 'node:fs/promises'
import { readText } from './read.ts'
import type { NetworkSummary } from '../schemas.ts'

/** /proc/net/route holds addresses as little-endian hex. */
function hexToIpv4(hex: string): string {
  return [6, 4, 2, 0].map((i) => parseInt(hex.slice(i, i + 2), 16)).join('.')
}

export function parseDefaultRoute(table: string | null): { gateway: string; interface: string } | null {
  for (const line of (table ?? '').split('\n').slice(1)) {
    const [iface, destination, gateway, flags, , , , mask] = line.trim().split(/\s+/)
    // RTF_UP (1) and RTF_GATEWAY (2), destination and mask 0: the default route.
    if (iface && destination === '00000000' && mask === '00000000' && (parseInt(flags ?? '0', 16) & 3) === 3) {
      return { gateway: hexToIpv4(gateway!), interface: iface }
    }
  }
  return null
}

export function parseNameservers(resolvConf: string | null): string[] {
  return [...(resolvConf ?? '').matchAll(/^\s*nameserver\s+(\S+)/gm)].map((m) => m[1]!)
}

/** Interfaces (addresses, MAC, link state) from /sys and the OS, default route from /proc/net/route, DNS from resolv.conf. */
export async function readNetworkSummary(): Promise<NetworkSummary> {
  const names = (await readdir('/sys/class/net').catch(() => [] as string[])).sort()
  const addresses = networkInterfaces()
  const interfaces = await Promise.all(names.map(async (name) => {
    const base = `/sys/class/net/${name}`
    const [mac, operstate, mtu, speed] = await Promise.all([readText(`${base}/address`), readText(`${base}/operstate`), readText(`${base}/mtu`), readText(`${base}/speed`)])
    const speedMbps = Number(speed?.trim())
    return {
      name,
      mac: mac?.trim() ?? '',
      state: operstate?.trim() ?? 'unknown',
      mtu: Number(mtu?.trim() ?? 0),
      speedMbps: Number.isFinite(speedMbps) && speedMbps > 0 ? speedMbps : null,
      addresses: (addresses[name] ?? []).map((a) => ({ family: a.family === 'IPv6' ? 'ipv6' as const : 'ipv4' as const, address: a.address, prefix: Number(a.cidr?.split('/')[1] ?? 0), netmask: a.netmask })),
    }
  }))
  const [route, resolv] = await Promise.all([readText('/proc/net/route'), readText('/etc/resolv.conf')])
  return { interfaces, defaultRoute: parseDefaultRoute(route), dnsServers: parseNameservers(resolv) }
}
