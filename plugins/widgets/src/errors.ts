import { defineError } from '@hostd/sdk'

/** Every error code this plugin answers with (listed in the README). */
export const WidgetErrors = {
  notFound: defineError('HOSTD_WIDGETS_NOT_FOUND', 404, 'No such widget'),
  tooMany: defineError('HOSTD_WIDGETS_TOO_MANY', 409, 'Too many widgets'),
  runnerUnavailable: defineError(
    'HOSTD_WIDGETS_RUNNER_UNAVAILABLE',
    503,
    'Widget scripts cannot run: no unprivileged account is configured',
  ),
} as const
