/**
 * How third-party plugins are run: in a sandboxed process of their own (the default), with these limits. Read from
 * the environment (or the HOSTD_CONFIG file) by config.ts.
 */

export interface IsolationSettings {
  /**
   * `on`: every plugin outside the repository's plugins/ runs in its own sandboxed process. `off` (HOSTD_PLUGINS_ISOLATION
   * =off) runs them in the daemon's process like built-in plugins: for test harnesses that need it, never in production.
   */
  mode: 'on' | 'off'
  /** The heap cap of each plugin's process, MiB (HOSTD_PLUGIN_HEAP_MB, default 128). */
  heapMb: number
  /**
   * Deadline of each call into the plugin: import, setup, start, stop (HOSTD_PLUGIN_CALL_TIMEOUT_MS, default 10 s, the
   * same as for plugins in the daemon's process).
   */
  callTimeoutMs: number
  /** Deadline of each request (HOSTD_PLUGIN_REQUEST_TIMEOUT_MS, default 30 s): then 504. */
  requestTimeoutMs: number
  /** How often the kernel pings a running plugin's process (HOSTD_PLUGIN_HEARTBEAT_MS, default 1 s); 3 missed: killed. */
  heartbeatMs: number
  /** The first wait before a restart (HOSTD_PLUGIN_RESTART_DELAY_MS, default 500 ms), doubled after each crash. */
  restartDelayMs: number
}

export const ISOLATION_KEYS = [
  'HOSTD_PLUGINS_ISOLATION',
  'HOSTD_PLUGIN_HEAP_MB',
  'HOSTD_PLUGIN_REQUEST_TIMEOUT_MS',
  'HOSTD_PLUGIN_HEARTBEAT_MS',
  'HOSTD_PLUGIN_RESTART_DELAY_MS',
]

/** Missed heartbeats in a row after which a plugin's process counts as hung and is killed. */
export const MISSED_HEARTBEATS = 3
/** Crashes within CRASH_WINDOW_MS after which a plugin is left failed instead of restarted. */
export const MAX_CRASHES = 5
export const CRASH_WINDOW_MS = 60_000
/** The longest wait between restarts. */
export const MAX_RESTART_DELAY_MS = 4_000

export const DEFAULT_ISOLATION: IsolationSettings = {
  mode: 'on',
  heapMb: 128,
  callTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  heartbeatMs: 1_000,
  restartDelayMs: 500,
}

type IntReader = (
  env: Record<string, string | undefined>,
  name: string,
  fallback: number,
  min: number,
  max: number,
) => number

/**
 * The settings from the environment; `int` is config.ts's reader (whole numbers in a range, else a ConfigError), and
 * `callTimeoutMs` config's HOSTD_PLUGIN_CALL_TIMEOUT_MS.
 */
export function isolationSettings(
  env: Record<string, string | undefined>,
  int: IntReader,
  fail: (message: string) => Error,
  callTimeoutMs = DEFAULT_ISOLATION.callTimeoutMs,
): IsolationSettings {
  const mode = env.HOSTD_PLUGINS_ISOLATION || 'on'
  if (mode !== 'on' && mode !== 'off') throw fail(`HOSTD_PLUGINS_ISOLATION="${mode}" must be on or off`)
  const d = DEFAULT_ISOLATION
  return {
    mode,
    heapMb: int(env, 'HOSTD_PLUGIN_HEAP_MB', d.heapMb, 16, 16_384),
    callTimeoutMs,
    requestTimeoutMs: int(env, 'HOSTD_PLUGIN_REQUEST_TIMEOUT_MS', d.requestTimeoutMs, 100, 3_600_000),
    heartbeatMs: int(env, 'HOSTD_PLUGIN_HEARTBEAT_MS', d.heartbeatMs, 50, 60_000),
    restartDelayMs: int(env, 'HOSTD_PLUGIN_RESTART_DELAY_MS', d.restartDelayMs, 10, 60_000),
  }
}
