/** REST routes: reading is viewer, changing sources admin, install/uninstall operator (the containers plugin's role rules then decide). */
import type { RouteRegistrar } from '@hostd/sdk'
import {
  CatalogListSchema,
  InstallRequestSchema,
  InstallResultSchema,
  SourceAddSchema,
  SourceParams,
  SourceStatusSchema,
  UninstallRequestSchema,
  UninstallResultSchema,
} from './schemas.ts'
import { Type } from '@hostd/sdk'
import type { CatalogService } from './service.ts'

const tags = ['catalog']

export function catalogRoutes(r: RouteRegistrar, catalog: () => CatalogService): void {
  r.get(
    '/api/catalog',
    {
      role: 'viewer',
      schema: {
        tags,
        response: { 200: CatalogListSchema },
        description: 'Installable apps with their fields, categories, sources and what is installed.',
      },
    },
    () => catalog().list(),
  )

  r.get(
    '/api/catalog/sources',
    { role: 'viewer', schema: { tags, response: { 200: Type.Array(SourceStatusSchema) } } },
    () => catalog().sources(),
  )

  r.post(
    '/api/catalog/sources',
    {
      role: 'admin',
      schema: {
        tags,
        body: SourceAddSchema,
        response: { 201: SourceStatusSchema },
        description:
          'Add a directory or an HTTPS URL; it is read at once and its status answered (a source that cannot be read is still added, with ok false).',
      },
    },
    async (req, reply) => reply.code(201).send(await catalog().addSource(req.body, req)),
  )

  r.post(
    '/api/catalog/sources/:id/refresh',
    { role: 'admin', schema: { tags, params: SourceParams, response: { 200: SourceStatusSchema } } },
    (req) => catalog().refreshSource(req.params.id, req),
  )

  r.post('/api/catalog/sources/:id/remove', { role: 'admin', schema: { tags, params: SourceParams } }, (req) =>
    catalog().removeSource(req.params.id, req),
  )

  r.post(
    '/api/catalog/install',
    {
      role: 'operator',
      schema: {
        tags,
        body: InstallRequestSchema,
        response: { 201: InstallResultSchema },
        description:
          'Install an app; an app whose spec reaches the host (a path field) needs admin. The socket at the same path streams progress.',
      },
    },
    async (req, reply) => reply.code(201).send(await catalog().install(req.body, req.user!.role, req)),
  )

  r.post(
    '/api/catalog/uninstall',
    {
      role: 'operator',
      schema: {
        tags,
        body: UninstallRequestSchema,
        response: { 200: UninstallResultSchema },
        description: 'Remove a container the catalog installed and, with removeVolumes, its named volumes.',
      },
    },
    (req) => catalog().uninstall(req.body.container, req.body.removeVolumes ?? false, req),
  )
}
