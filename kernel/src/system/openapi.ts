import type { RouteSchema } from '@hostd/sdk'

export interface DocumentedRoute {
  method: string
  path: string
  role: string
  owner: string
  /** API tokens are refused (RouteOptions.sessionOnly). */
  sessionOnly?: boolean
  /** A session whose password was given in the last few minutes (KernelRouteOptions.recentSignIn). */
  recentSignIn?: boolean
  schema?: RouteSchema
}

const toOpenApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')

/** Query and path parameters from an object schema, as OpenAPI parameter objects. */
function parameters(schema: RouteSchema['params'], where: 'path' | 'query') {
  const props = (schema as { properties?: Record<string, unknown>; required?: string[] } | undefined)?.properties ?? {}
  const required = new Set((schema as { required?: string[] } | undefined)?.required ?? [])
  return Object.entries(props).map(([name, s]) => ({
    name,
    in: where,
    required: where === 'path' || required.has(name),
    schema: s,
  }))
}

/**
 * The OpenAPI 3.1 document, built from the same TypeBox schemas that validate and serialize each route,
 * so it cannot drift from what the daemon does. Each operation names its role in `x-hostd-role`.
 */
export function openApiDocument(version: string, routes: DocumentedRoute[]) {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const route of routes) {
    const s = route.schema ?? {}
    const responses: Record<string, unknown> = {}
    for (const [status, schema] of Object.entries(s.response ?? {})) {
      responses[status] = { description: `HTTP ${status}`, content: { 'application/json': { schema } } }
    }
    if (Object.keys(responses).length === 0) responses['2XX'] = { description: 'Success' }
    responses.default = {
      description: 'Error',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    }
    const path = toOpenApiPath(route.path)
    paths[path] ??= {}
    paths[path][route.method.toLowerCase()] = {
      'x-hostd-role': route.role,
      'x-hostd-owner': route.owner,
      ...(route.sessionOnly ? { 'x-hostd-session-only': true } : {}),
      ...(route.recentSignIn ? { 'x-hostd-recent-sign-in': true } : {}),
      ...(s.summary ? { summary: s.summary } : {}),
      ...(route.role === 'public' ? { security: [] } : {}),
      parameters: [...parameters(s.params, 'path'), ...parameters(s.querystring, 'query')],
      ...(s.body ? { requestBody: { required: true, content: { 'application/json': { schema: s.body } } } } : {}),
      responses,
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'hostd',
      version,
      description:
        'Roles: viewer < operator < admin; x-hostd-role names the least role an operation needs; ' +
        'x-hostd-session-only marks what an API token may not do; x-hostd-recent-sign-in what needs a session ' +
        'whose password was given in the last few minutes (POST /api/auth/reauth).',
    },
    security: [{ bearer: [] }, { cookie: [] }],
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer' },
        cookie: { type: 'apiKey', in: 'cookie', name: 'svc_session' },
      },
      schemas: {
        Error: {
          type: 'object',
          required: ['error', 'message'],
          properties: { error: { type: 'string' }, message: { type: 'string' } },
        },
      },
    },
    paths,
  }
}
