/**
 * /api/alerts: viewers read alerts, history, rules and silences; operators silence and read channels and
 * deliveries; admins edit rules, channels and settings. Every change is audited (service.ts).
 */
import { Type, type RouteRegistrar } from '@hostd/sdk'
import {
  AlertListSchema,
  BadgeSchema,
  ChannelCreateSchema,
  ChannelListSchema,
  ChannelSchema,
  ChannelUpdateSchema,
  DeliveryListSchema,
  HistoryListSchema,
  HistoryQuerySchema,
  IdParams,
  IdSchema,
  PrometheusSchema,
  RuleCreateSchema,
  RuleListSchema,
  RuleSchema,
  RuleUpdateSchema,
  SettingsSchema,
  SettingsUpdateSchema,
  SilenceCreateSchema,
  SilenceListSchema,
  SilenceSchema,
  TestResultSchema,
} from './schemas.ts'
import type { AlertService } from './service.ts'

const tags = ['alerts']
const BASE = '/api/alerts'
const DeliveryQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
  channelId: Type.Optional(IdSchema),
})

export function alertRoutes(r: RouteRegistrar, alerts: () => AlertService): void {
  r.get(
    BASE,
    {
      role: 'viewer',
      schema: {
        tags,
        summary: 'Alerts pending and firing now',
        description: '`firing` counts the firing alerts that are not silenced (the header badge).',
        response: { 200: AlertListSchema },
      },
    },
    () => alerts().alerts(),
  )

  r.get(
    `${BASE}/badge`,
    {
      role: 'viewer',
      schema: {
        tags,
        summary: "The shell header's count: firing alerts that are not silenced",
        response: { 200: BadgeSchema },
      },
    },
    () => {
      const count = alerts().alerts().firing
      return { count, label: `${count} ${count === 1 ? 'alert' : 'alerts'} firing` }
    },
  )

  r.get(
    `${BASE}/history`,
    {
      role: 'viewer',
      schema: {
        tags,
        summary: 'Alerts that fired, newest first',
        querystring: HistoryQuerySchema,
        response: { 200: HistoryListSchema },
      },
    },
    async (req) => ({ items: await alerts().history(req.query.limit ?? 100) }),
  )

  r.get(
    `${BASE}/prometheus`,
    {
      role: 'viewer',
      schema: {
        tags,
        summary: 'Alert states as Prometheus series (hostd_alerts)',
        response: { 200: PrometheusSchema },
      },
    },
    async (_req, reply) => reply.type('text/plain; version=0.0.4; charset=utf-8').send(alerts().prometheus()),
  )

  // Rules
  r.get(`${BASE}/rules`, { role: 'viewer', schema: { tags, response: { 200: RuleListSchema } } }, () => ({
    items: alerts().listRules(),
  }))
  r.post(
    `${BASE}/rules`,
    { role: 'admin', schema: { tags, body: RuleCreateSchema, response: { 201: RuleSchema } } },
    async (req, reply) => reply.code(201).send(await alerts().createRule(req.body, req)),
  )
  r.put(
    `${BASE}/rules/:id`,
    { role: 'admin', schema: { tags, params: IdParams, body: RuleUpdateSchema, response: { 200: RuleSchema } } },
    (req) => alerts().updateRule(req.params.id, req.body, req),
  )
  r.delete(`${BASE}/rules/:id`, { role: 'admin', schema: { tags, params: IdParams } }, async (req, reply) => {
    await alerts().deleteRule(req.params.id, req)
    return reply.code(204).send()
  })

  // Channels
  r.get(
    `${BASE}/channels`,
    {
      role: 'operator',
      schema: {
        tags,
        summary: 'Channels with their delivery status; secrets are never answered',
        response: { 200: ChannelListSchema },
      },
    },
    async () => ({ items: await alerts().channelsWithStatus() }),
  )
  r.post(
    `${BASE}/channels`,
    { role: 'admin', schema: { tags, body: ChannelCreateSchema, response: { 201: ChannelSchema } } },
    async (req, reply) => reply.code(201).send(await alerts().createChannel(req.body, req)),
  )
  r.put(
    `${BASE}/channels/:id`,
    { role: 'admin', schema: { tags, params: IdParams, body: ChannelUpdateSchema, response: { 200: ChannelSchema } } },
    (req) => alerts().updateChannel(req.params.id, req.body, req),
  )
  r.delete(`${BASE}/channels/:id`, { role: 'admin', schema: { tags, params: IdParams } }, async (req, reply) => {
    await alerts().deleteChannel(req.params.id, req)
    return reply.code(204).send()
  })
  r.post(
    `${BASE}/channels/:id/test`,
    {
      role: 'admin',
      schema: {
        tags,
        summary: 'Send a test message now',
        description: 'Answers 200 whether or not it arrived: `ok`, and `error` saying why not in words.',
        params: IdParams,
        response: { 200: TestResultSchema },
      },
    },
    (req) => alerts().testChannel(req.params.id, req),
  )
  r.get(
    `${BASE}/deliveries`,
    {
      role: 'operator',
      schema: {
        tags,
        summary: 'Recent deliveries, their attempts and failures',
        querystring: DeliveryQuery,
        response: { 200: DeliveryListSchema },
      },
    },
    async (req) => ({ items: await alerts().deliveries(req.query.limit ?? 100, req.query.channelId) }),
  )

  // Silences
  r.get(`${BASE}/silences`, { role: 'viewer', schema: { tags, response: { 200: SilenceListSchema } } }, () => ({
    items: alerts().listSilences(),
  }))
  r.post(
    `${BASE}/silences`,
    { role: 'operator', schema: { tags, body: SilenceCreateSchema, response: { 201: SilenceSchema } } },
    async (req, reply) => reply.code(201).send(await alerts().createSilence(req.body, req.user!.username, req)),
  )
  r.post(
    `${BASE}/silences/:id/expire`,
    {
      role: 'operator',
      schema: { tags, summary: 'End a silence now', params: IdParams, response: { 200: SilenceSchema } },
    },
    (req) => alerts().expireSilence(req.params.id, req),
  )

  // Settings
  r.get(`${BASE}/settings`, { role: 'viewer', schema: { tags, response: { 200: SettingsSchema } } }, () =>
    alerts().settings(),
  )
  r.put(
    `${BASE}/settings`,
    { role: 'admin', schema: { tags, body: SettingsUpdateSchema, response: { 200: SettingsSchema } } },
    (req) => alerts().setSettings(req.body, req),
  )
}
