/** The widgets' limits, in a module of their own so the page (ui/) shares them without the schema library. */
export const LIMITS = {
  widgets: 50,
  title: 120,
  script: 16 * 1024,
  /** stdout and stderr together, in bytes; past it the script is killed and the output marked truncated. */
  outputBytes: 64 * 1024,
  refreshSeconds: { min: 10, max: 86_400, default: 300 },
  timeoutSeconds: { min: 1, max: 120, default: 15 },
} as const
