/**
 * The alerts plugin: rules over what hostd already observes (metrics samples, container events, SMART health),
 * notifications by webhook (Alertmanager's payload), email, ntfy and Apprise, silences, pages. See README.md.
 */
import { definePlugin, tokens } from '@hostd/sdk'
import { alertRoutes } from './routes.ts'
import { AlertService, type AlertOptions } from './service.ts'
import { AlertStore } from './store.ts'

function positive(value: string | undefined, fallback: number): number {
  const n = Number(value)
  return Number.isFinite(n) && n >= 0 ? n : fallback
}

export function createAlertsPlugin(options: Partial<AlertOptions> = {}) {
  return definePlugin({
    id: 'alerts',
    version: '1.0.0',
    kernel: '^1.3.0',
    description: 'Alerts and notifications: rules, email, webhook, ntfy and Apprise channels, silences.',
    deps: {
      database: tokens.database,
      settings: tokens.settings,
      audit: tokens.audit,
      log: tokens.logger,
      optional: tokens.optional,
      helper: tokens.helper,
      events: tokens.events,
      secrets: tokens.secrets,
    },
    setup: ({ database, settings, audit, log, optional, helper, events, secrets }) =>
      new AlertService(
        {
          store: new AlertStore(database),
          settings,
          audit,
          log,
          optional,
          helper,
          events,
          secrets,
        },
        {
          retryBaseMs: options.retryBaseMs ?? positive(process.env.HOSTD_ALERTS_RETRY_BASE_SECONDS, 30) * 1000,
          retryMaxMs: options.retryMaxMs ?? 3600_000,
          maxAttempts: options.maxAttempts ?? 12,
          smartIntervalMs:
            options.smartIntervalMs ?? positive(process.env.HOSTD_ALERTS_SMART_INTERVAL_SECONDS, 3600) * 1000,
          attachIntervalMs: options.attachIntervalMs ?? 10_000,
          blockDir: options.blockDir,
          systemIntervalMs:
            options.systemIntervalMs ?? positive(process.env.HOSTD_ALERTS_SYSTEM_INTERVAL_SECONDS, 900) * 1000,
          rebootFile: options.rebootFile,
          now: options.now,
        },
      ),
    routes: (r, _deps, service) => alertRoutes(r, () => service),
    start: (_deps, service) => service.start(),
    stop: (_deps, service) => service.stop(),
    ui: {
      pages: [
        {
          path: '/alerts',
          title: 'Alerts',
          icon: 'triangle-alert',
          role: 'viewer',
          module: 'ui/alerts.tsx',
          element: 'alerts-page',
          badge: '/api/alerts/badge',
        },
      ],
      cards: [
        { title: 'Alerts', module: 'ui/card.tsx', element: 'alerts-card', role: 'viewer', size: 'small', order: 5 },
      ],
    },
  })
}

export default createAlertsPlugin()
