import { join } from 'node:path'
import { definePlugin, tokens } from '@hostd/sdk'
import { Power, type PowerOptions } from './power.ts'
import { PrivilegedActions } from './privileged.ts'
import { readHostStatus } from './host/status.ts'
import { systemRoutes } from './routes.ts'
import { Updates, type UpdateOptions } from './updates.ts'
import { readFileSync } from 'node:fs'

export type SystemOptions = PowerOptions &
  Omit<UpdateOptions, 'installDir'> & {
    installDir: string | null
    /** Its presence means a reboot is required (`/run/reboot-required`; tests name their own). */
    rebootFile: string
    /** The SSH daemon: its absence means SSH is not installed (`/usr/sbin/sshd`; tests name a missing one). */
    sshdPath: string
  }

/**
 * Options from the daemon's environment: HOSTD_UPDATE_FEED_URL, HOSTD_UPDATE_PUBLIC_KEY (PEM text, or a path to a
 * PEM file), HOSTD_UPDATE_CHECK_HOURS (default 24), HOSTD_UPDATE_FIRST_CHECK_SECONDS (the first check after start,
 * default 60), HOSTD_UPDATE_INSTALL_DIR (default <data dir>/app).
 */
export function systemOptionsFromEnv(env: Record<string, string | undefined> = process.env): SystemOptions {
  const key = env.HOSTD_UPDATE_PUBLIC_KEY
  const hours = Number(env.HOSTD_UPDATE_CHECK_HOURS ?? 24)
  if (!(hours > 0 && hours <= 24 * 30)) throw new Error('HOSTD_UPDATE_CHECK_HOURS must be more than 0 and at most 720')
  const firstCheckSeconds = Number(env.HOSTD_UPDATE_FIRST_CHECK_SECONDS ?? 60)
  if (!(firstCheckSeconds >= 0 && firstCheckSeconds <= 3600))
    throw new Error('HOSTD_UPDATE_FIRST_CHECK_SECONDS must be from 0 to 3600')
  return {
    powerStatePath: '/sys/power/state',
    x11SocketDir: '/tmp/.X11-unix',
    feedUrl: env.HOSTD_UPDATE_FEED_URL || null,
    publicKeyPem: !key ? null : key.includes('BEGIN PUBLIC KEY') ? key : readFileSync(key, 'utf8'),
    checkEveryHours: hours,
    firstCheckDelayMs: firstCheckSeconds * 1000,
    installDir: env.HOSTD_UPDATE_INSTALL_DIR || null,
    maxArchiveBytes: 1024 * 1024 * 1024,
    rebootFile: '/run/reboot-required',
    sshdPath: '/usr/sbin/sshd',
  }
}

/** The system plugin with explicit options (tests: stand-in feed, stand-in sleep states). */
export function createSystemPlugin(overrides: Partial<SystemOptions> = {}) {
  return definePlugin({
    id: 'system',
    version: '1.0.0',
    kernel: '^1.1.0',
    description: 'Host facts, settings snapshot, power actions, hostd updates, and the Admin Privileges actions.',
    ui: {
      pages: [
        {
          path: '/system',
          title: 'System',
          icon: 'settings',
          role: 'viewer',
          module: 'ui/system.tsx',
          element: 'system-page',
        },
      ],
      cards: [
        { title: 'This server', module: 'ui/cards.tsx', element: 'system-host', size: 'medium', order: 20 },
        { title: 'Updates', module: 'ui/cards.tsx', element: 'system-software', size: 'medium', order: 21 },
      ],
    },
    deps: {
      helper: tokens.helper,
      audit: tokens.audit,
      log: tokens.logger,
      kernel: tokens.kernel,
      optional: tokens.optional,
    },
    setup: ({ helper, audit, log, kernel, optional }) => {
      const options = { ...systemOptionsFromEnv(), ...overrides }
      const installDir = options.installDir ?? join(kernel.dataDir, 'app')
      return {
        status: () => readHostStatus(optional, options.rebootFile),
        power: new Power(helper, audit, options),
        privileged: new PrivilegedActions(helper, audit, options.sshdPath),
        sshdPath: options.sshdPath,
        updates: new Updates({ ...options, installDir }, kernel.version, helper, audit, log),
      }
    },
    routes: (r, _deps, services) => systemRoutes(r, services),
    start: (_deps, { updates }) => updates.start(),
    stop: (_deps, { updates }) => updates.stop(),
  })
}

export default createSystemPlugin()
