import { Type } from '@sinclair/typebox'
import type { RouteRegistrar } from '@hostd/sdk'
import type { KernelServices } from '../services.ts'
import { openApiDocument } from './openapi.ts'

export function systemRoutes(r: RouteRegistrar, k: KernelServices): void {
  r.get(
    '/health',
    {
      role: 'public',
      schema: { response: { 200: Type.Object({ status: Type.Literal('ok'), version: Type.String() }) } },
    },
    () => ({
      status: 'ok' as const,
      version: k.version,
    }),
  )
  r.get(
    '/api/version',
    {
      role: 'viewer',
      schema: {
        response: { 200: Type.Object({ version: Type.String(), commit: Type.String(), apiVersion: Type.String() }) },
      },
    },
    () => ({ version: k.version, commit: k.commit, apiVersion: k.apiVersion }),
  )
  // Built per request from the live route table: plugins come and go.
  r.get('/api/openapi.json', { role: 'viewer' }, () => openApiDocument(k.version, k.registry().routeTable()))
}
