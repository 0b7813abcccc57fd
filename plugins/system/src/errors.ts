import { defineError } from '@hostd/sdk'

/** Every error code this plugin answers with (listed in the README). */
export const SystemErrors = {
  updateInProgress: defineError(
    'HOSTD_UPDATE_IN_PROGRESS',
    503,
    'An update is still finishing; try again once the daemon has restarted',
  ),
  updatesNotConfigured: defineError(
    'HOSTD_UPDATE_NOT_CONFIGURED',
    409,
    'No release feed or no release signing key is configured',
  ),
  noUpdate: defineError('HOSTD_UPDATE_NONE', 409, 'Already up to date'),
  feedUnreadable: defineError('HOSTD_UPDATE_FEED_UNREADABLE', 502, 'The release feed could not be read'),
  badSignature: defineError(
    'HOSTD_UPDATE_BAD_SIGNATURE',
    502,
    'The release signature does not verify; nothing was installed',
  ),
  badHash: defineError(
    'HOSTD_UPDATE_BAD_HASH',
    502,
    'The downloaded release does not match its SHA-256; nothing was installed',
  ),
  noDisplay: defineError('HOSTD_POWER_NO_DISPLAY', 409, 'This host has no display to put to sleep'),
  sleepUnsupported: defineError(
    'HOSTD_POWER_SLEEP_UNSUPPORTED',
    409,
    'This host cannot sleep (its kernel offers no suspend state)',
  ),
  unknownPrivilegedAction: defineError('HOSTD_PRIVILEGED_UNKNOWN_ACTION', 404, 'No such privileged action'),
  notInstalled: defineError('HOSTD_SYSTEM_NOT_INSTALLED', 409, 'The program this setting needs is not installed'),
  noSystemd: defineError(
    'HOSTD_SYSTEM_NO_SYSTEMD',
    409,
    'This host was not started with systemd, which this setting needs (systemctl, timedatectl, hostnamectl)',
  ),
  busUnavailable: defineError(
    'HOSTD_SYSTEM_BUS_UNAVAILABLE',
    503,
    'The system message bus (D-Bus) is not running; start it with: sudo systemctl start dbus',
  ),
  ntpUnavailable: defineError(
    'HOSTD_SYSTEM_NTP_UNAVAILABLE',
    409,
    'No network time service is installed; install systemd-timesyncd or chrony',
  ),
} as const
