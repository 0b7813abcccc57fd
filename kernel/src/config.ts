import { existsSync, readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { isAbsolute, join, resolve } from 'node:path'
import { ISOLATION_KEYS, isolationSettings, type IsolationSettings } from './isolation/settings.ts'

export interface KernelConfig {
  port: number
  host: string
  dataDir: string
  pluginsDir: string
  /** Plugins shipped with hostd (this repository's plugins/). */
  builtinPluginsDir: string | null
  /** Only these folders of builtinPluginsDir are loaded (HOSTD_BUILTIN_PLUGINS=a,b); null loads them all. */
  builtinPluginsOnly: string[] | null
  /** The web UI's build output (this repository's ui/dist); null serves no UI (in-process test kernels). */
  uiDir: string | null
  helperSocket: string
  dockerHost: string | null
  tlsCert: string
  tlsKey: string
  /** True when HOSTD_TLS_CERT/KEY name the user's own pair: then they must exist, nothing is generated. */
  tlsUserSupplied: boolean
  sessionIdleSeconds: number
  sessionMaxSeconds: number
  /** Changes to account security need the password given within this many seconds ("sudo mode"). */
  reauthSeconds: number
  /** Failed sign-ins allowed per user, and per client address, within `loginWindowSeconds`. */
  loginMaxFailuresPerUser: number
  loginMaxFailuresPerAddress: number
  loginWindowSeconds: number
  logLevel: string
  /** How long each call into a plugin's code may take (import, setup, start, stop...): docs/ARCHITECTURE.md, "Supervision". */
  pluginCallTimeoutMs?: number
  /** How third-party plugins run: sandboxed (heap cap, deadlines, heartbeat, restarts): kernel/src/isolation. */
  isolation?: IsolationSettings
  /**
   * Development mode (HOSTD_DEV=1): an open page of a third-party plugin loads its module again when the plugin's files
   * change (docs/PLUGINS.md, "Development mode"). Off by default.
   */
  dev?: boolean
}

/** A configuration mistake: main prints its message as one line and exits non-zero. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

type Env = Record<string, string | undefined>

/** Every variable hostd reads; a config file may hold only these. */
export const CONFIG_KEYS = [
  'HOSTD_PORT',
  'HOSTD_HOST',
  'HOSTD_DATA_DIR',
  'HOSTD_PLUGINS_DIR',
  'HOSTD_BUILTIN_PLUGINS',
  'HOSTD_HELPER_SOCKET',
  'DOCKER_HOST',
  'HOSTD_TLS_CERT',
  'HOSTD_TLS_KEY',
  'HOSTD_SESSION_IDLE_SECONDS',
  'HOSTD_SESSION_MAX_SECONDS',
  'HOSTD_REAUTH_SECONDS',
  'HOSTD_LOGIN_MAX_FAILURES_PER_USER',
  'HOSTD_LOGIN_MAX_FAILURES_PER_ADDRESS',
  'HOSTD_LOGIN_WINDOW_SECONDS',
  'HOSTD_LOG_LEVEL',
  'HOSTD_COMMIT',
  'HOSTD_PLUGIN_CALL_TIMEOUT_MS',
  'HOSTD_DEV',
  ...ISOLATION_KEYS,
]

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name}="${raw}" is not a whole number`)
  const value = Number(raw)
  if (value < min || value > max) throw new ConfigError(`${name}=${value} is out of range (${min}..${max})`)
  return value
}

function path(env: Env, name: string, fallback: string): string {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (raw.includes('\0')) throw new ConfigError(`${name} holds a NUL byte`)
  return resolve(raw)
}

/**
 * Reads configuration from the environment, with an optional JSON file (HOSTD_CONFIG) whose keys are
 * the same variable names; the environment wins over the file.
 */
export function loadConfig(processEnv: Env = process.env, repoRoot?: string): KernelConfig {
  const env: Env = { ...readConfigFile(processEnv.HOSTD_CONFIG), ...processEnv }
  const dataDir = path(env, 'HOSTD_DATA_DIR', join(homedir(), '.hostd'))
  const host = env.HOSTD_HOST || '0.0.0.0'
  if (!/^[0-9a-fA-F:.]+$|^[a-zA-Z0-9.-]+$/.test(host))
    throw new ConfigError(`HOSTD_HOST="${host}" is not an address or host name`)
  const dockerHost = env.DOCKER_HOST || null
  if (dockerHost && !/^(unix|tcp|npipe|ssh):\/\//.test(dockerHost)) {
    throw new ConfigError(`DOCKER_HOST="${dockerHost}" must start with unix://, tcp://, npipe:// or ssh://`)
  }
  const tlsCert = env.HOSTD_TLS_CERT ? path(env, 'HOSTD_TLS_CERT', '') : join(dataDir, 'tls', 'cert.pem')
  const tlsKey = env.HOSTD_TLS_KEY ? path(env, 'HOSTD_TLS_KEY', '') : join(dataDir, 'tls', 'key.pem')
  if (Boolean(env.HOSTD_TLS_CERT) !== Boolean(env.HOSTD_TLS_KEY)) {
    throw new ConfigError('HOSTD_TLS_CERT and HOSTD_TLS_KEY go together: set both or neither')
  }
  const builtinSetting = env.HOSTD_BUILTIN_PLUGINS || '1'
  if (!/^(?:[01]|[a-z0-9][a-z0-9._-]*(?:,[a-z0-9][a-z0-9._-]*)*)$/.test(builtinSetting)) {
    throw new ConfigError(
      `HOSTD_BUILTIN_PLUGINS="${builtinSetting}" must be 1 (all), 0 (none) or a comma-separated list of folder names under plugins/`,
    )
  }
  const builtin = builtinSetting === '0' ? null : repoRoot ? join(repoRoot, 'plugins') : null
  const levels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']
  const dev = env.HOSTD_DEV || '0'
  if (dev !== '0' && dev !== '1') throw new ConfigError(`HOSTD_DEV="${dev}" must be 1 (development mode) or 0`)
  const logLevel = env.HOSTD_LOG_LEVEL || 'info'
  if (!levels.includes(logLevel))
    throw new ConfigError(`HOSTD_LOG_LEVEL="${logLevel}" is not one of ${levels.join(', ')}`)
  return {
    port: int(env, 'HOSTD_PORT', 4443, 0, 65535),
    host,
    dataDir,
    pluginsDir: path(env, 'HOSTD_PLUGINS_DIR', join(dataDir, 'plugins')),
    builtinPluginsDir: builtin,
    builtinPluginsOnly: builtinSetting === '0' || builtinSetting === '1' ? null : builtinSetting.split(','),
    uiDir: repoRoot ? join(repoRoot, 'ui', 'dist') : null,
    helperSocket: path(env, 'HOSTD_HELPER_SOCKET', '/run/hostd/helper.sock'),
    dockerHost,
    tlsCert,
    tlsKey,
    tlsUserSupplied: Boolean(env.HOSTD_TLS_CERT),
    sessionIdleSeconds: int(env, 'HOSTD_SESSION_IDLE_SECONDS', 7 * 24 * 3600, 60, 365 * 24 * 3600),
    sessionMaxSeconds: int(env, 'HOSTD_SESSION_MAX_SECONDS', 30 * 24 * 3600, 60, 365 * 24 * 3600),
    reauthSeconds: int(env, 'HOSTD_REAUTH_SECONDS', 5 * 60, 10, 24 * 3600),
    loginMaxFailuresPerUser: int(env, 'HOSTD_LOGIN_MAX_FAILURES_PER_USER', 5, 1, 1000),
    loginMaxFailuresPerAddress: int(env, 'HOSTD_LOGIN_MAX_FAILURES_PER_ADDRESS', 20, 1, 10000),
    loginWindowSeconds: int(env, 'HOSTD_LOGIN_WINDOW_SECONDS', 15 * 60, 1, 24 * 3600),
    logLevel,
    pluginCallTimeoutMs: int(env, 'HOSTD_PLUGIN_CALL_TIMEOUT_MS', 10_000, 50, 600_000),
    dev: dev === '1',
    isolation: isolationSettings(
      env,
      int,
      (m) => new ConfigError(m),
      int(env, 'HOSTD_PLUGIN_CALL_TIMEOUT_MS', 10_000, 50, 600_000),
    ),
  }
}

function readConfigFile(file: string | undefined): Env {
  if (!file) return {}
  const full = isAbsolute(file) ? file : resolve(file)
  if (!existsSync(full)) throw new ConfigError(`HOSTD_CONFIG=${file}: no such file`)
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(full, 'utf8'))
  } catch (err) {
    throw new ConfigError(`HOSTD_CONFIG=${file}: not valid JSON (${(err as Error).message})`)
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new ConfigError(`HOSTD_CONFIG=${file}: must hold a JSON object`)
  const out: Env = {}
  for (const [key, value] of Object.entries(parsed)) {
    if (!CONFIG_KEYS.includes(key)) throw new ConfigError(`HOSTD_CONFIG=${file}: unknown key "${key}"`)
    out[key] = String(value)
  }
  return out
}
