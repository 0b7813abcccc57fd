import { defineError } from '@hostd/sdk'

/** What a request to an isolated plugin can end with besides the plugin's own answer (docs/API.md). */
export const IsolationErrors = {
  /** The plugin's process did not answer the request within its deadline. */
  timeout: defineError('HOSTD_PLUGIN_TIMEOUT', 504, 'The plugin did not answer in time'),
} as const
