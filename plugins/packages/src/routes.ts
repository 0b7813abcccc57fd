import type { RouteRegistrar } from '@hostd/sdk'
import {
  PackageListSchema,
  RemovalQuerySchema,
  RemovalSchema,
  SearchQuerySchema,
  SearchResultSchema,
} from './schemas.ts'
import type { Packages } from './service.ts'

/** The read routes: no root helper needed (dpkg's database and apt's lists are world-readable), but the removal's. */
export function packageRoutes(r: RouteRegistrar, packages: Packages): void {
  r.get('/api/packages', { role: 'viewer', schema: { response: { 200: PackageListSchema } } }, () => packages.list())

  r.get(
    '/api/packages/search',
    { role: 'viewer', schema: { querystring: SearchQuerySchema, response: { 200: SearchResultSchema } } },
    (req) => packages.search(req.query.q),
  )

  // Asked before a removal, by whoever may remove (admins): apt's simulation through the root helper changes nothing.
  r.get(
    '/api/packages/removal',
    {
      role: 'admin',
      schema: {
        querystring: RemovalQuerySchema,
        response: { 200: RemovalSchema },
        description:
          'What removing an installed package takes with it (apt-get -s remove, through the root helper); ' +
          '409 HOSTD_PACKAGES_ESSENTIAL for a package the system needs.',
      },
    },
    (req) => packages.removal(req.query.name),
  )
}
