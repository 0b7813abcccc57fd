import { defineError } from '@hostd/sdk'

/** Every error code this plugin answers with (listed in the README). */
export const AlertErrors = {
  ruleNotFound: defineError('HOSTD_ALERTS_RULE_NOT_FOUND', 404, 'No such rule'),
  ruleInvalid: defineError('HOSTD_ALERTS_RULE_INVALID', 400, 'The rule is not valid'),
  channelNotFound: defineError('HOSTD_ALERTS_CHANNEL_NOT_FOUND', 404, 'No such channel'),
  channelInvalid: defineError('HOSTD_ALERTS_CHANNEL_INVALID', 400, 'The channel is not valid'),
  appriseMissing: defineError(
    'HOSTD_ALERTS_APPRISE_MISSING',
    409,
    'The Apprise CLI is not installed on this host (apt install apprise)',
  ),
  silenceNotFound: defineError('HOSTD_ALERTS_SILENCE_NOT_FOUND', 404, 'No such silence'),
  silenceInvalid: defineError('HOSTD_ALERTS_SILENCE_INVALID', 400, 'The silence is not valid'),
  tooMany: defineError('HOSTD_ALERTS_TOO_MANY', 409, 'Too many rules, channels or silences'),
} as const
