import { Type } from '@sinclair/typebox'
import { UuidSchema } from '@hostd/sdk'
import { MustEnrollSchema, PasswordSchema, RoleSchema, UserSchema } from '../users/schemas.ts'
import { TWO_FACTOR_REQUIREMENTS } from './policy.ts'

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])
const DateTime = Type.String({ format: 'date-time' })

/** A code as typed: six TOTP digits or a recovery code (spaces and dashes allowed). */
const CodeSchema = Type.String({ minLength: 1, maxLength: 64 })

/** `POST /api/auth/login` for a user with two-factor: no session yet, the second step's challenge instead. */
export const ChallengeSchema = Type.Object({
  twoFactorRequired: Type.Literal(true),
  challenge: Type.String(),
  expiresInSeconds: Type.Integer(),
})
export const VerifyBody = Type.Object(
  { challenge: Type.String({ minLength: 1, maxLength: 128 }), code: CodeSchema },
  { additionalProperties: false },
)

/** `GET /api/auth/me`: the User, `mustEnrollTwoFactor` when the policy sends them to enrollment, and the API token in use if any. */
export const MeSchema = Type.Composite([
  UserSchema,
  Type.Object({
    mustEnrollTwoFactor: MustEnrollSchema,
    apiToken: Type.Optional(Type.Object({ id: Type.String(), name: Type.String() })),
  }),
])

export const TwoFactorStatusSchema = Type.Object({
  enabled: Type.Boolean(),
  recoveryCodesLeft: Type.Integer(),
  /** The admin's policy requires two-factor of this user. */
  required: Type.Boolean(),
})
export const PasswordConfirmBody = Type.Object({ password: PasswordSchema }, { additionalProperties: false })
export const EnrollmentSchema = Type.Object({ secret: Type.String(), uri: Type.String(), qrSvg: Type.String() })
export const CodeBody = Type.Object({ code: CodeSchema }, { additionalProperties: false })
export const DisableBody = Type.Object({ password: PasswordSchema, code: CodeSchema }, { additionalProperties: false })
export const RecoveryCodesSchema = Type.Object({ recoveryCodes: Type.Array(Type.String()) })

export const SessionSchema = Type.Object({
  id: Type.String(),
  createdAt: DateTime,
  lastSeenAt: DateTime,
  ip: Nullable(Type.String()),
  userAgent: Nullable(Type.String()),
  current: Type.Boolean(),
})
export const SessionIdParams = Type.Object({
  id: Type.String({ pattern: '^[0-9a-f]{32}$', minLength: 32, maxLength: 32 }),
})

/** A path prefix a token may call: under /api, plain segments (no `.` or `..`). */
const PrefixSchema = Type.String({ maxLength: 200, pattern: '^/api(?:/(?!\\.\\.?(?:/|$))[A-Za-z0-9._~@:+-]+)*/?$' })
export const ApiTokenSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  role: RoleSchema,
  prefixes: Nullable(Type.Array(Type.String())),
  createdAt: DateTime,
  lastUsedAt: Nullable(DateTime),
  expiresAt: Nullable(DateTime),
})
export const NewApiTokenBody = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 64,
      pattern: '^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*$',
    }),
    role: RoleSchema,
    /** Days until it stops working; leave out for a token that does not expire. */
    expiresInDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
    /** Path prefixes it may call (e.g. `/api/containers`); leave out for every path its role allows. */
    prefixes: Type.Optional(Type.Array(PrefixSchema, { minItems: 1, maxItems: 20 })),
  },
  { additionalProperties: false },
)
export const NewApiTokenSchema = Type.Composite([ApiTokenSchema, Type.Object({ secret: Type.String() })])
export const TokenIdParams = Type.Object({ id: UuidSchema })
export const UserTokenParams = Type.Object({ id: UuidSchema, tokenId: UuidSchema })

export const PolicySchema = Type.Object(
  { requireTwoFactor: Type.Union(TWO_FACTOR_REQUIREMENTS.map((r) => Type.Literal(r))) },
  { additionalProperties: false },
)
