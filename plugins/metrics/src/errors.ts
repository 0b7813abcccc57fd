import { defineError, errors } from '@hostd/sdk'

/** Every error code this plugin answers with (listed in the README), and the sdk's 423 with this plugin's message. */
export const MetricsErrors = {
  streamClosed: defineError('HOSTD_METRICS_STOPPING', 503, 'The metrics plugin is stopping; reconnect in a moment'),
  networkFailed: defineError('HOSTD_ACTIVITY_NETWORK_FAILED', 503, 'The per-process network measurement failed'),
  processNotFound: defineError('HOSTD_ACTIVITY_PROCESS_NOT_FOUND', 404, 'No such process; refresh the list'),
  processProtected: defineError('HOSTD_ACTIVITY_PROCESS_PROTECTED', 409, 'This process may not be ended from here'),
  signalUnsupported: defineError(
    'HOSTD_ACTIVITY_SIGNAL_UNSUPPORTED',
    501,
    'The root helper on this host cannot end processes; update and restart it',
  ),
  networkNeedsHelper: (
    message = 'network=1 needs Admin Privileges: the root helper runs the nethogs trace. Leave the option out for the other figures.',
  ) => errors.privilegesMissing(message),
} as const
