import { defineError } from '@hostd/sdk'

/** The VPN plugin's stable error codes (see README). */
export const VpnErrors = {
  notInstalled: defineError('HOSTD_VPN_NOT_INSTALLED', 503, 'tailscaled is not installed'),
  notRunning: defineError('HOSTD_VPN_NOT_RUNNING', 503, 'tailscaled is not running'),
  notPermitted: defineError('HOSTD_VPN_NOT_PERMITTED', 503, "tailscaled does not let hostd's user make changes"),
  invalidSetting: defineError('HOSTD_VPN_SETTING_INVALID', 400, 'Invalid VPN setting'),
  refused: defineError('HOSTD_VPN_REFUSED', 409, 'tailscaled refused the change'),
  needsLogin: defineError('HOSTD_VPN_NEEDS_LOGIN', 409, 'Log in first'),
  loginTimeout: defineError('HOSTD_VPN_LOGIN_TIMEOUT', 504, 'tailscaled gave no login URL in time'),
  loginFailed: defineError('HOSTD_VPN_LOGIN_FAILED', 502, 'The login could not start'),
  badAnswer: defineError('HOSTD_VPN_BAD_ANSWER', 502, 'tailscaled answered something unexpected'),
} as const
