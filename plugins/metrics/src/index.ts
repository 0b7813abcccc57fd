import { definePlugin, tokens, type HostdPlugin } from '@hostd/sdk'
import { metricsRoutes } from './routes.ts'
import { MetricsService, type MetricsServiceOptions } from './service.ts'
import { HistoryStore } from './store.ts'

/**
 * Host metrics: GET /api/metrics, the two-second SSE stream, history, Prometheus text, and process activity.
 * A factory so each kernel that loads it (tests run several in one process) gets its own service.
 */
const services = new WeakMap<HostdPlugin, () => MetricsService | null>()

/** The service behind a plugin made by createMetricsPlugin (tests look at the sampler's state through it). */
export function serviceOf(plugin: HostdPlugin): MetricsService | null {
  return services.get(plugin)?.() ?? null
}

export function createMetricsPlugin(options: MetricsServiceOptions = {}): HostdPlugin {
  let service: MetricsService | null = null
  const current = () => {
    if (!service) throw new Error('metrics plugin used before its routes were registered')
    return service
  }
  const plugin = definePlugin({
    id: 'metrics',
    version: '1.0.0',
    kernel: '^1.0.0',
    description:
      'Host metrics, a two-second event stream with history, Prometheus text, and process activity sampling.',
    ui: {
      pages: [
        {
          path: '/activity',
          title: 'Activity',
          icon: 'activity',
          role: 'operator',
          module: 'ui/activity.tsx',
          element: 'metrics-activity',
        },
      ],
      cards: [{ title: 'Activity', module: 'ui/cards.tsx', element: 'metrics-live', size: 'large', order: 10 }],
    },
    deps: { log: tokens.logger, database: tokens.database, helper: tokens.helper },
    routes: (r, { log, database, helper }) => {
      service = new MetricsService({ log, helper, store: new HistoryStore(database) }, options)
      metricsRoutes(r, current)
    },
    start: () => current().start(),
    stop: () => current().stop(),
  })
  services.set(plugin, () => service)
  return plugin
}

export default createMetricsPlugin()
