import { bind, createServiceToken, definePlugin, tokens, type HostdPlugin } from '@hostd/sdk'
import type { ProvidedServices } from './api.ts'
import { metricsRoutes } from './routes.ts'
import { MetricsService, type MetricsServiceOptions } from './service.ts'
import { HistoryStore } from './store.ts'

/** Where a plugin's running load is found: a kernel's plugin registry (`t.kernel.registry` in a test). */
interface PluginStates {
  stateOf(plugin: HostdPlugin): unknown
}

/** The service of `plugin`'s running load in `registry`, or null (tests look at the sampler's state through it). */
export function serviceOf(registry: PluginStates, plugin: HostdPlugin): MetricsService | null {
  const state = registry.stateOf(plugin)
  return state instanceof MetricsService ? state : null
}

const metricsSamples = createServiceToken<ProvidedServices['metrics.samples']>('metrics.samples')

/** Host metrics: GET /api/metrics, the two-second SSE stream, history, Prometheus text, and process activity. */
export function createMetricsPlugin(options: MetricsServiceOptions = {}) {
  return definePlugin({
    id: 'metrics',
    version: '1.0.0',
    kernel: '^1.1.0',
    description:
      'Host metrics, a two-second event stream with history, Prometheus text, and process activity sampling.',
    ui: {
      pages: [
        {
          path: '/activity',
          title: 'Processes',
          icon: 'activity',
          role: 'operator',
          module: 'ui/activity.tsx',
          element: 'metrics-activity',
        },
      ],
      cards: [
        { title: 'Memory', module: 'ui/cards.tsx', element: 'metrics-memory', size: 'small', order: 5 },
        { title: 'Server load', module: 'ui/cards.tsx', element: 'metrics-live', size: 'large', order: 10 },
      ],
    },
    deps: { log: tokens.logger, database: tokens.database, helper: tokens.helper, audit: tokens.audit },
    setup: ({ log, database, helper, audit }) =>
      new MetricsService({ log, helper, audit, store: new HistoryStore(database) }, options),
    provides: (_deps, service) => [
      bind(metricsSamples, {
        subscribe: (listener) => service.subscribe(listener),
        addPrometheusSection: (section) => service.addPrometheusSection(section),
      }),
    ],
    routes: (r, _deps, service) => metricsRoutes(r, () => service),
    start: (_deps, service) => service.start(),
    stop: (_deps, service) => service.stop(),
  })
}

export default createMetricsPlugin()
