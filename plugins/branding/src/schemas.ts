/** TypeBox shapes, one per shape: validation, serialization, types and the OpenAPI document. */
import { Type, type Static } from '@hostd/sdk'
import { LIMITS, BACKGROUND_MAX_BYTES } from './limits.ts'

export { LIMITS, BACKGROUND_MAX_BYTES }

/** What the sign-in page reads, without a session (the contract with the UI: exactly these names). */
export const BrandingSchema = Type.Object({
  serverName: Type.String({ description: 'Display name of this server; the host name until an admin sets one' }),
  headline: Type.String(),
  description: Type.String(),
  background: Type.Union([Type.String(), Type.Null()], {
    description: 'URL of the background image (public, content-addressed), or null',
  }),
})
export type Branding = Static<typeof BrandingSchema>

/** PUT /api/branding: each field optional (omitted = unchanged); serverName "" goes back to the host name. */
export const BrandingUpdateSchema = Type.Object(
  {
    serverName: Type.Optional(Type.String({ maxLength: LIMITS.serverName })),
    headline: Type.Optional(Type.String({ maxLength: LIMITS.headline })),
    description: Type.Optional(Type.String({ maxLength: LIMITS.description })),
  },
  { additionalProperties: false },
)
export type BrandingUpdate = Static<typeof BrandingUpdateSchema>

export const BackgroundQuery = Type.Object({ v: Type.Optional(Type.String({ maxLength: 64 })) })
