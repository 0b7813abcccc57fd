import type { RouteRegistrar } from '@hostd/sdk'
import {
  HistoryQuerySchema,
  HistoryResponseSchema,
  MetricsSnapshotSchema,
  ProcessQuerySchema,
  ProcessSampleSchema,
  ProcessSignalBodySchema,
  ProcessSignalParamsSchema,
  ProcessSignalResultSchema,
  PrometheusSchema,
  StreamQuerySchema,
} from './schemas.ts'
import { MetricsErrors } from './errors.ts'
import type { MetricsService } from './service.ts'

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

export function metricsRoutes(r: RouteRegistrar, service: () => MetricsService): void {
  r.get(
    '/api/metrics',
    {
      role: 'viewer',
      schema: { summary: 'One host metrics snapshot', tags: ['metrics'], response: { 200: MetricsSnapshotSchema } },
    },
    () => service().snapshot(),
  )

  r.get(
    '/api/metrics/stream',
    {
      role: 'viewer',
      schema: {
        summary: 'Server-sent events: a metrics snapshot every two seconds (event "metrics", id = sample time in ms)',
        tags: ['metrics'],
        querystring: StreamQuerySchema,
      },
    },
    (req, reply) => {
      const s = service()
      if (s.hub.closed) throw MetricsErrors.streamClosed()
      // The stream outlives the handler: Fastify steps aside and the hub owns the raw response.
      reply.hijack()
      try {
        // This plugin version retiring (unload, upgrade, shutdown) ends the stream at once; EventSource reconnects.
        const end = () => reply.raw.end()
        req.lifetime.addEventListener('abort', end, { once: true })
        reply.raw.once('close', () => req.lifetime.removeEventListener('abort', end))
        s.stream(req.raw, reply.raw, req.query.limit ?? null)
      } catch (err) {
        req.log.warn({ err }, 'metrics stream failed to start')
        reply.raw.destroy()
      }
    },
  )

  r.get(
    '/api/metrics/history',
    {
      role: 'viewer',
      schema: {
        summary: 'Host history: range 1h (2 s), 24h (1 min) or 7d (10 min)',
        tags: ['metrics'],
        querystring: HistoryQuerySchema,
        response: { 200: HistoryResponseSchema },
      },
    },
    (req) => service().queryHistory(req.query.range ?? '1h'),
  )

  r.get(
    '/api/metrics/prometheus',
    {
      role: 'viewer',
      schema: {
        summary: 'Host metrics in the Prometheus text exposition format',
        tags: ['metrics'],
        response: { 200: PrometheusSchema },
      },
    },
    async (_req, reply) => {
      const text = await service().prometheus()
      return reply.type(PROMETHEUS_CONTENT_TYPE).send(text)
    },
  )

  r.get(
    '/api/activity/processes',
    {
      role: 'operator',
      schema: {
        summary: 'Sample the process table (rates against the previous call)',
        tags: ['activity'],
        querystring: ProcessQuerySchema,
        response: { 200: ProcessSampleSchema },
      },
    },
    (req) => service().processes(req.query.network !== undefined),
  )

  r.post(
    '/api/activity/processes/:pid/signal',
    {
      role: 'admin',
      needs: ['helper'],
      schema: {
        summary: 'End a process: TERM asks it to end, KILL ends it at once (through the root helper; audited)',
        tags: ['activity'],
        params: ProcessSignalParamsSchema,
        body: ProcessSignalBodySchema,
        response: { 200: ProcessSignalResultSchema },
      },
    },
    (req) => service().signal(req.params.pid, req.body.signal, req),
  )
}
