/** The branding limits, in a module of their own so the settings page (ui/) shares them without the schema library. */
export const LIMITS = { serverName: 64, headline: 120, description: 1000 } as const
/** The background upload cap (bytes). */
export const BACKGROUND_MAX_BYTES = 4 * 1024 * 1024
