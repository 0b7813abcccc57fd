/** The routes of the interface document; `script` reaches admins only (WidgetService.view). */
import type { RouteRegistrar } from '@hostd/sdk'
import { IdParams, WidgetCreateSchema, WidgetListSchema, WidgetSchema, WidgetUpdateSchema } from './schemas.ts'
import type { WidgetService } from './service.ts'

const tags = ['widgets']
const BASE = '/api/bento/widgets'

export function widgetRoutes(r: RouteRegistrar, widgets: WidgetService): void {
  r.get(
    BASE,
    {
      role: 'viewer',
      schema: {
        tags,
        response: { 200: WidgetListSchema },
        description: 'Widgets with their cached output; `script` only for admins.',
      },
    },
    (req) => widgets.list(req.user!.role),
  )

  r.post(
    BASE,
    { role: 'admin', schema: { tags, body: WidgetCreateSchema, response: { 201: WidgetSchema } } },
    async (req, reply) => reply.code(201).send(await widgets.create(req.body, req)),
  )

  r.post(
    `${BASE}/:id/update`,
    { role: 'admin', schema: { tags, params: IdParams, body: WidgetUpdateSchema, response: { 200: WidgetSchema } } },
    (req) => widgets.update(req.params.id, req.body, req),
  )

  r.post(`${BASE}/:id/delete`, { role: 'admin', schema: { tags, params: IdParams } }, (req) =>
    widgets.remove(req.params.id, req),
  )

  r.post(
    `${BASE}/:id/run`,
    {
      role: 'operator',
      schema: {
        tags,
        params: IdParams,
        response: { 200: WidgetSchema },
        description: 'Runs it now (joining a run in progress) and answers the fresh output.',
      },
    },
    (req) => widgets.runNow(req.params.id, req.user!.role, req),
  )
}
