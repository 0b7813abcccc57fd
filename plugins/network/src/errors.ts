import { defineError } from '@hostd/sdk'

/** Every error code this plugin answers with (listed in the README). */
export const NetworkErrors = {
  serviceNotFound: defineError('HOSTD_NETWORK_SERVICE_NOT_FOUND', 404, 'No such network service'),
  nothingToConfirm: defineError(
    'HOSTD_NETWORK_NOTHING_TO_CONFIRM',
    404,
    'No change of this service is waiting for confirmation',
  ),
  confirmPending: defineError(
    'HOSTD_NETWORK_CONFIRM_PENDING',
    409,
    'Another network change is waiting for confirmation; confirm it or let it revert first',
  ),
  reverted: defineError(
    'HOSTD_NETWORK_REVERTED',
    409,
    'Too late: the change was not confirmed in time and has been reverted',
  ),
  backendUnavailable: defineError(
    'HOSTD_NETWORK_BACKEND_UNAVAILABLE',
    503,
    'NetworkManager is not running on this host; start it with: sudo systemctl start NetworkManager',
  ),
  busUnavailable: defineError(
    'HOSTD_NETWORK_BUS_UNAVAILABLE',
    503,
    'NetworkManager cannot be reached: the system message bus (D-Bus) is not running; start dbus, then NetworkManager',
  ),
  activationFailed: defineError(
    'HOSTD_NETWORK_ACTIVATION_FAILED',
    409,
    'NetworkManager could not bring the connection up',
  ),
} as const
