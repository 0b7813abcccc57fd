import { access } from 'node:fs/promises'
import { parseKeyValues, processNames, readLink, readText } from './read.ts'
import type { SettingsSnapshot } from '../schemas.ts'

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  )

export async function readHostname(): Promise<string> {
  return ((await readText('/proc/sys/kernel/hostname')) ?? '').trim()
}

/** /etc/timezone (Debian), else the zone /etc/localtime links to. */
export async function readTimeZone(): Promise<string | null> {
  const named = (await readText('/etc/timezone'))?.trim()
  if (named) return named
  const link = await readLink('/etc/localtime')
  return link?.split('zoneinfo/')[1] ?? null
}

const NTP_DAEMONS = ['systemd-timesyn', 'chronyd', 'ntpd', 'openntpd']

export async function readNtp(names?: Set<string>): Promise<{ active: boolean; daemon: string | null }> {
  const running = names ?? (await processNames())
  const daemon = NTP_DAEMONS.find((name) => running.has(name)) ?? null
  return { active: daemon !== null, daemon: daemon === 'systemd-timesyn' ? 'systemd-timesyncd' : daemon }
}

function sshdOption(config: string, key: string): string | null {
  return new RegExp(`^\\s*${key}\\s+(\\S+)`, 'mi').exec(config)?.[1] ?? null
}

/** Where Debian's openssh-server puts the daemon: its presence means SSH is installed. */
export const SSHD = '/usr/sbin/sshd'

export async function readSsh(names?: Set<string>, sshd = SSHD) {
  const running = (names ?? (await processNames())).has('sshd')
  const config = (await readText('/etc/ssh/sshd_config')) ?? ''
  const port = sshdOption(config, 'Port')
  return {
    installed: await exists(sshd),
    running,
    port: port ? Number(port) : running ? 22 : null,
    permitRootLogin: sshdOption(config, 'PermitRootLogin'),
    passwordAuthentication: sshdOption(config, 'PasswordAuthentication'),
  }
}

/** ufw's own switch, else a running firewalld, else an nftables config (whether it is loaded needs root to see). */
export async function readFirewall(names?: Set<string>): Promise<{ tool: string | null; enabled: boolean | null }> {
  const ufw = await readText('/etc/ufw/ufw.conf')
  if (ufw !== null) return { tool: 'ufw', enabled: parseKeyValues(ufw).ENABLED === 'yes' }
  if ((names ?? (await processNames())).has('firewalld')) return { tool: 'firewalld', enabled: true }
  if (await exists('/etc/nftables.conf')) return { tool: 'nftables', enabled: null }
  return { tool: null, enabled: null }
}

export async function readAutoUpdate(): Promise<{ unattendedUpgrades: boolean }> {
  const periodic = (await readText('/etc/apt/apt.conf.d/20auto-upgrades')) ?? ''
  const on = /APT::Periodic::Unattended-Upgrade\s+"([0-9]+)"/.exec(periodic)?.[1]
  return { unattendedUpgrades: (await exists('/usr/bin/unattended-upgrade')) && on !== undefined && on !== '0' }
}

/** The read-only host settings snapshot; `hostdUpdates` comes from the updates service. */
export async function readSettings(
  hostdUpdates: SettingsSnapshot['hostdUpdates'],
  sshd = SSHD,
): Promise<SettingsSnapshot> {
  const names = await processNames()
  const [hostname, timeZone, ntp, ssh, firewall, autoUpdate] = await Promise.all([
    readHostname(),
    readTimeZone(),
    readNtp(names),
    readSsh(names, sshd),
    readFirewall(names),
    readAutoUpdate(),
  ])
  return { hostname, timeZone, ntp, ssh, firewall, autoUpdate, hostdUpdates }
}
