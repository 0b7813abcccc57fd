import type { RouteRegistrar } from '@hostd/sdk'
import { PackageListSchema, SearchQuerySchema, SearchResultSchema } from './schemas.ts'
import type { Packages } from './service.ts'

/** The read routes: no root helper needed (dpkg's database and apt's lists are world-readable). */
export function packageRoutes(r: RouteRegistrar, packages: Packages): void {
  r.get('/api/packages', { role: 'viewer', schema: { response: { 200: PackageListSchema } } }, () => packages.list())

  r.get(
    '/api/packages/search',
    { role: 'viewer', schema: { querystring: SearchQuerySchema, response: { 200: SearchResultSchema } } },
    (req) => packages.search(req.query.q),
  )
}
