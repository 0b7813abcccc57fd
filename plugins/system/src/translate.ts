import { access } from 'node:fs/promises'
import { HostdError } from '@hostd/sdk'
import { SystemErrors } from './errors.ts'

/** sd_booted(): systemd is the init system exactly when this directory exists. */
const booted = () =>
  access('/run/systemd/system').then(
    () => true,
    () => false,
  )

/**
 * systemctl's and timedatectl's known failures, as the root helper relays them ("timedatectl failed (exit 1): <its
 * last line>"), as errors naming the cause and the next step, the tool's words under `details.raw`. Null for any
 * other error (then it is shown as it is). `what` names the setting ("Network time (NTP)").
 */
export async function translateSystemError(err: unknown, what: string): Promise<HostdError | null> {
  if (!(err instanceof HostdError) || err.code !== 'HOSTD_HELPER_ACTION_FAILED') return null
  const raw = err.message
  const details = { raw }
  if (/not been booted with systemd|Failed to connect to bus|System has not been booted/i.test(raw)) {
    if (!(await booted()) || /Host is down|not been booted/i.test(raw))
      return SystemErrors.noSystemd(
        `${what} cannot be changed from hostd: this host was not started with systemd (a container or a minimal ` +
          'system), and the tools that change it (systemctl, timedatectl, hostnamectl) need it. Change it on the host ' +
          "itself with the init system's own tools.",
        undefined,
        details,
      )
    return SystemErrors.busUnavailable(
      `${what} cannot be changed: the system message bus (D-Bus) is not running. Start it with ` +
        '"sudo systemctl start dbus", then try again.',
      undefined,
      details,
    )
  }
  if (/Unit (file )?ssh(d)?\.service (not found|does not exist)/i.test(raw))
    return SystemErrors.notInstalled(
      'The SSH server (openssh-server) is not installed on this host. Install it from the Packages page, then turn it on here.',
      undefined,
      details,
    )
  if (/NTP not supported/i.test(raw))
    return SystemErrors.ntpUnavailable(
      'No network time service is installed (systemd-timesyncd or chrony). Install systemd-timesyncd from the ' +
        'Packages page, then turn network time on here.',
      undefined,
      details,
    )
  return null
}
