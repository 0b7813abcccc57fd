import { HostdError, type HelperClient } from '@hostd/sdk'
import { NetworkErrors } from './errors.ts'
import type { NetworkService } from './schemas.ts'

/** Splits one `nmcli --terse --escape yes` line on unescaped colons and unescapes `\:` and `\\`. */
export function splitTerse(line: string): string[] {
  const fields: string[] = []
  let current = ''
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!
    if (ch === '\\' && i + 1 < line.length) current += line[++i]
    else if (ch === ':') {
      fields.push(current)
      current = ''
    } else current += ch
  }
  fields.push(current)
  return fields
}

/** `field:value` lines (from `connection show <id>`) into a map; repeated fields like `IP4.DNS[2]` keep their index. */
export function parseFields(stdout: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const line of stdout.split('\n')) {
    if (!line) continue
    const [key = '', ...rest] = splitTerse(line)
    out.set(key, rest.join(':'))
  }
  return out
}

const PORTS: Record<string, string> = {
  '802-3-ethernet': 'Ethernet',
  '802-11-wireless': 'Wi-Fi',
  bridge: 'Bridge',
  bond: 'Bond',
  vlan: 'VLAN',
  team: 'Team',
  wireguard: 'WireGuard',
  vpn: 'VPN',
  'ip-tunnel': 'IP tunnel',
  gsm: 'Mobile broadband',
  cdma: 'Mobile broadband',
  bluetooth: 'Bluetooth',
  infiniband: 'InfiniBand',
  tun: 'TUN/TAP',
  veth: 'veth',
  macvlan: 'MACVLAN',
}

export function prefixToMask(prefix: number): string {
  const bits = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0
  return [24, 16, 8, 0].map((shift) => (bits >>> shift) & 255).join('.')
}

/** Dotted mask to prefix length; null when the mask is not contiguous (255.0.255.0). */
export function maskToPrefix(mask: string): number | null {
  const bits = mask.split('.').reduce((acc, octet) => ((acc << 8) | Number(octet)) >>> 0, 0)
  const prefix = bits.toString(2).replace(/0+$/, '').length
  return prefixToMask(prefix) === mask ? prefix : null
}

function indexed(fields: Map<string, string>, name: string): string[] {
  return [...fields]
    .filter(([key]) => key === name || key.startsWith(`${name}[`))
    .map(([, v]) => v)
    .filter(Boolean)
}

/** One connection's `connection show` fields as the interface document's Network service. */
export function toService(fields: Map<string, string>): NetworkService {
  const active = fields.get('GENERAL.STATE') === 'activated'
  const live = indexed(fields, 'IP4.ADDRESS')[0]
  const configured = (fields.get('ipv4.addresses') ?? '').split(',')[0]?.trim() ?? ''
  const [address = '', prefix = ''] = (active && live ? live : configured).split('/')
  const router = (active ? fields.get('IP4.GATEWAY') : '') || fields.get('ipv4.gateway') || ''
  const liveDns = indexed(fields, 'IP4.DNS')
  const configuredDns = (fields.get('ipv4.dns') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  const type = fields.get('connection.type') ?? ''
  return {
    name: fields.get('connection.id') ?? '',
    hardwarePort: PORTS[type] ?? type,
    device: fields.get('GENERAL.DEVICES') || fields.get('connection.interface-name') || '',
    enabled: active,
    dhcp: fields.get('ipv4.method') === 'auto',
    ipv4: address,
    subnetMask: prefix ? prefixToMask(Number(prefix)) : '',
    router: router === '--' ? '' : router,
    dnsServers: active && liveDns.length ? liveDns : configuredDns,
  }
}

interface Stdout {
  stdout: string
}

/**
 * nmcli's and gdbus's known failures (as the root helper relays them: "nmcli failed (exit 8): Error: ...") as errors
 * that name the cause and the next step, the tool's own words kept under `details.raw`; null for any other failure.
 */
export function translateNmError(raw: string): HostdError | null {
  const details = { raw }
  if (/NetworkManager is not running|org\.freedesktop\.NetworkManager was not provided|ServiceUnknown/i.test(raw))
    return NetworkErrors.backendUnavailable(
      'NetworkManager is not running on this host, so its connections cannot be read or changed. Start it with ' +
        '"sudo systemctl start NetworkManager" (install it first with "sudo apt install network-manager" if it is ' +
        'missing). The interfaces the kernel reports are listed meanwhile.',
      undefined,
      details,
    )
  if (
    /Could not create NMClient|Failed to connect to (the )?bus|Could not connect: (No such file|Connection refused)/i.test(
      raw,
    )
  )
    return NetworkErrors.busUnavailable(
      'NetworkManager cannot be reached: the system message bus (D-Bus) is not running or not reachable. Start it ' +
        'with "sudo systemctl start dbus", then NetworkManager with "sudo systemctl start NetworkManager".',
      undefined,
      details,
    )
  const unknown = /unknown connection '([^']*)'|Error: (.*?) - no such connection profile/i.exec(raw)
  if (unknown)
    return NetworkErrors.serviceNotFound(
      `NetworkManager has no connection named "${unknown[1] ?? unknown[2]}" (it may have been removed or renamed); refresh the page.`,
      undefined,
      details,
    )
  const activation = /Connection activation failed: (.+?)\.?$/im.exec(raw)
  if (activation)
    return NetworkErrors.activationFailed(
      `NetworkManager could not bring the connection up: ${activation[1]}. Check that the cable is plugged in or the ` +
        'device exists, then try again.',
      undefined,
      details,
    )
  return null
}

/** The helper with nmcli's known failures turned into clear errors (translateNmError). */
function calling(helper: HelperClient): HelperClient {
  return {
    available: () => helper.available(),
    async call<T>(action: string, args?: Record<string, unknown>): Promise<T> {
      try {
        return await helper.call<T>(action, args)
      } catch (err) {
        throw (err instanceof HostdError && err.statusCode !== 423 && translateNmError(err.message)) || err
      }
    },
  }
}

/** NetworkManager through the root helper's nm.* actions (nmcli and NetworkManager's checkpoint D-Bus API). */
export class NetworkManagerAdapter {
  readonly #helper: HelperClient

  constructor(helper: HelperClient) {
    this.#helper = calling(helper)
  }

  /** Connection names, loopback left out (not something to configure). */
  async names(): Promise<string[]> {
    const { stdout } = await this.#helper.call<Stdout>('nm.list')
    return stdout
      .split('\n')
      .filter(Boolean)
      .map(splitTerse)
      .filter((f) => f[2] !== 'loopback')
      .map((f) => f[0]!)
  }

  async show(service: string): Promise<NetworkService> {
    const { stdout } = await this.#helper.call<Stdout>('nm.show', { service })
    return toService(parseFields(stdout))
  }

  async list(): Promise<NetworkService[]> {
    return Promise.all((await this.names()).map((name) => this.show(name)))
  }

  async setDns(service: string, servers: string[]): Promise<void> {
    await this.#helper.call('nm.setDns', { service, servers })
  }

  async setIpv4(
    service: string,
    change: { dhcp: true } | { dhcp: false; address: string; router?: string },
  ): Promise<void> {
    if (change.dhcp) await this.#helper.call('nm.setIpv4Dhcp', { service })
    else
      await this.#helper.call('nm.setIpv4Manual', {
        service,
        address: change.address,
        ...(change.router ? { gateway: change.router } : {}),
      })
  }

  async setEnabled(service: string, enabled: boolean): Promise<void> {
    await this.#helper.call('nm.setAutoconnect', { service, on: enabled })
    await this.#helper.call(enabled ? 'nm.up' : 'nm.down', { service })
  }

  /** Re-activates an active connection so a changed profile takes effect. */
  async apply(service: string): Promise<void> {
    await this.#helper.call('nm.up', { service })
  }

  /** A NetworkManager checkpoint of every device: rolled back by NetworkManager itself after `seconds`. */
  async checkpoint(seconds: number): Promise<string> {
    const { stdout } = await this.#helper.call<Stdout>('nm.checkpoint', { seconds })
    const path = /'(\/org\/freedesktop\/NetworkManager\/Checkpoint\/\d+)'/.exec(stdout)?.[1]
    if (!path) throw new Error(`unexpected checkpoint answer: ${stdout.slice(0, 200)}`)
    return path
  }

  async confirm(checkpoint: string): Promise<void> {
    await this.#helper.call('nm.confirm', { checkpoint })
  }

  async rollback(checkpoint: string): Promise<void> {
    await this.#helper.call('nm.rollback', { checkpoint })
  }
}
