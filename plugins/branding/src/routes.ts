/** The routes: GET public (the sign-in page has no session), changes admin, every change audited. */
import type { Readable } from 'node:stream'
import type { AuditService, RouteRegistrar } from '@hostd/sdk'
import { BrandingErrors } from './errors.ts'
import { BackgroundQuery, BACKGROUND_MAX_BYTES, BrandingSchema, BrandingUpdateSchema } from './schemas.ts'
import type { BrandingStore } from './service.ts'

const tags = ['branding']

export function brandingRoutes(r: RouteRegistrar, store: BrandingStore, audit: AuditService): void {
  r.get(
    '/api/branding',
    {
      role: 'public',
      schema: {
        tags,
        response: { 200: BrandingSchema },
        description: 'Sign-in page branding. `background` is a public URL or null.',
      },
    },
    () => store.get(),
  )

  r.put(
    '/api/branding',
    {
      role: 'admin',
      schema: {
        tags,
        body: BrandingUpdateSchema,
        response: { 200: BrandingSchema },
        description: 'Set any of serverName (64), headline (120), description (1000); plain text only.',
      },
    },
    async (req) => {
      const changed = await store.update(req.body)
      await audit.record({ action: 'branding.set', target: 'branding', detail: { changed } }, req)
      return store.get()
    },
  )

  r.get(
    '/api/branding/background',
    {
      role: 'public',
      schema: {
        tags,
        querystring: BackgroundQuery,
        description: 'The background image; immutable caching when `v` names its current hash.',
      },
    },
    async (req, reply) => {
      const { meta, data } = await store.background()
      const etag = `"${meta.sha256}"`
      reply
        .header('content-security-policy', "default-src 'none'; sandbox")
        .header('x-content-type-options', 'nosniff')
        .header('etag', etag)
        .header(
          'cache-control',
          req.query.v === meta.sha256.slice(0, 16) ? 'public, max-age=31536000, immutable' : 'no-cache',
        )
      if (req.headers['if-none-match'] === etag) return reply.code(304).send()
      return reply.type(meta.type).send(data)
    },
  )

  r.put(
    '/api/branding/background',
    {
      role: 'admin',
      rawBody: true,
      schema: {
        tags,
        response: { 200: BrandingSchema },
        description: 'Raw body: a PNG, JPEG or WebP image of at most 4 MiB (type read from its bytes).',
      },
    },
    async (req) => {
      const declared = Number(req.headers['content-length'])
      if (Number.isFinite(declared) && declared > BACKGROUND_MAX_BYTES)
        throw BrandingErrors.imageTooLarge(
          `The background image is larger than ${BACKGROUND_MAX_BYTES / 1024 / 1024} MiB`,
        )
      const body = req.body as Readable | undefined
      if (!body || typeof (body as Readable).pipe !== 'function')
        throw BrandingErrors.imageType(
          'Send the image bytes as the request body (Content-Type image/png, image/jpeg or image/webp)',
        )
      try {
        const meta = await store.setBackground(body)
        await audit.record(
          {
            action: 'branding.background.set',
            target: 'branding',
            detail: { type: meta.type, bytes: meta.bytes, sha256: meta.sha256 },
          },
          req,
        )
      } catch (err) {
        await audit.record(
          {
            action: 'branding.background.set',
            target: 'branding',
            result: 'failure',
            detail: { error: (err as { code?: string }).code ?? 'error' },
          },
          req,
        )
        throw err
      }
      return store.get()
    },
  )

  r.delete(
    '/api/branding/background',
    { role: 'admin', schema: { tags, description: 'Remove the background (204 whether or not one was set).' } },
    async (req) => {
      const had = await store.removeBackground()
      if (had) await audit.record({ action: 'branding.background.remove', target: 'branding' }, req)
    },
  )
}
