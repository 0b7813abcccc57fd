import { networkInterfaces } from 'node:os'
import { readdir } from 'node:fs/promises'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
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

type Address = NetworkSummary['interfaces'][number]['addresses'][number]

/** The mask of a prefix length, written as Node's os.networkInterfaces() writes it. */
function netmask(family: 'ipv4' | 'ipv6', prefix: number): string {
  const part = (bits: number, i: number) => 2 ** bits - 2 ** (bits - Math.max(0, Math.min(bits, prefix - bits * i)))
  if (family === 'ipv4') return [0, 1, 2, 3].map((i) => part(8, i)).join('.')
  return [0, 1, 2, 3, 4, 5, 6, 7]
    .map((i) => part(16, i).toString(16))
    .join(':')
    .replace(/(^|:)0(:0)+$/, '::')
}

/**
 * Every interface's addresses, down interfaces included: the OS call behind `os.networkInterfaces()` (libuv) skips
 * interfaces that are not up, so a configured but down link would look unaddressed. `ip -j address` (iproute2,
 * unprivileged, an argument vector) reports them all; without it, the OS call's view is the fallback.
 */
async function readAddresses(): Promise<Record<string, Address[]>> {
  try {
    const { stdout } = await promisify(execFile)('ip', ['-j', 'address', 'show'], {
      timeout: 5000,
      maxBuffer: 4 * 1024 * 1024,
    })
    const links = JSON.parse(stdout) as {
      ifname: string
      addr_info?: { family: string; local: string; prefixlen: number }[]
    }[]
    const out: Record<string, Address[]> = {}
    for (const link of links) {
      out[link.ifname] = (link.addr_info ?? [])
        .filter((a) => a.family === 'inet' || a.family === 'inet6')
        .map((a) => {
          const family = a.family === 'inet6' ? ('ipv6' as const) : ('ipv4' as const)
          return { family, address: a.local, prefix: a.prefixlen, netmask: netmask(family, a.prefixlen) }
        })
    }
    return out
  } catch {
    const out: Record<string, Address[]> = {}
    for (const [name, list] of Object.entries(networkInterfaces())) {
      out[name] = (list ?? []).map((a) => ({
        family: a.family === 'IPv6' ? ('ipv6' as const) : ('ipv4' as const),
        address: a.address,
        prefix: Number(a.cidr?.split('/')[1] ?? 0),
        netmask: a.netmask,
      }))
    }
    return out
  }
}

/** Interfaces (addresses, MAC, link state) from /sys and the OS, default route from /proc/net/route, DNS from resolv.conf. */
export async function readNetworkSummary(): Promise<NetworkSummary> {
  const names = (await readdir('/sys/class/net').catch(() => [] as string[])).sort()
  const addresses = await readAddresses()
  const interfaces = await Promise.all(
    names.map(async (name) => {
      const base = `/sys/class/net/${name}`
      const [mac, operstate, mtu, speed] = await Promise.all([
        readText(`${base}/address`),
        readText(`${base}/operstate`),
        readText(`${base}/mtu`),
        readText(`${base}/speed`),
      ])
      const speedMbps = Number(speed?.trim())
      return {
        name,
        mac: mac?.trim() ?? '',
        state: operstate?.trim() ?? 'unknown',
        mtu: Number(mtu?.trim() ?? 0),
        speedMbps: Number.isFinite(speedMbps) && speedMbps > 0 ? speedMbps : null,
        addresses: addresses[name] ?? [],
      }
    }),
  )
  const [route, resolv] = await Promise.all([readText('/proc/net/route'), readText('/etc/resolv.conf')])
  return { interfaces, defaultRoute: parseDefaultRoute(route), dnsServers: parseNameservers(resolv) }
}
