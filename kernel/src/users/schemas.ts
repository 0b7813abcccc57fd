import { Type, type Static } from '@sinclair/typebox'
import { UuidSchema } from '@hostd/sdk'

export const RoleSchema = Type.Union([Type.Literal('viewer'), Type.Literal('operator'), Type.Literal('admin')])

/** The interface document's User shape. */
export const UserSchema = Type.Object({
  id: Type.String(),
  username: Type.String(),
  role: RoleSchema,
  disabled: Type.Boolean(),
  twoFactor: Type.Boolean(),
})
export type User = Static<typeof UserSchema>

export const UsernameSchema = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._@-]*$' })
/** Length limits only; strength is checked by passwordWeakness so the message can say why. */
export const PasswordSchema = Type.String({ maxLength: 1024 })

export const CredentialsSchema = Type.Object(
  { username: UsernameSchema, password: PasswordSchema },
  { additionalProperties: false },
)
export const NewUserSchema = Type.Object(
  { username: UsernameSchema, password: PasswordSchema, role: RoleSchema },
  { additionalProperties: false },
)
export const UserIdParams = Type.Object({ id: UuidSchema })
export const RoleBody = Type.Object({ role: RoleSchema }, { additionalProperties: false })
export const UsernameBody = Type.Object({ username: UsernameSchema }, { additionalProperties: false })
export const DisabledBody = Type.Object({ disabled: Type.Boolean() }, { additionalProperties: false })
export const PasswordBody = Type.Object({ password: PasswordSchema }, { additionalProperties: false })
export const OwnPasswordBody = Type.Object(
  { currentPassword: Type.String({ maxLength: 1024 }), newPassword: PasswordSchema },
  { additionalProperties: false },
)
/**
 * Present (true) only when the admin's two-factor policy sends this user to enrollment first: the session can then
 * do nothing but enroll, read /api/auth/me and sign out.
 */
export const MustEnrollSchema = Type.Optional(Type.Literal(true))
/** A completed sign-in: the User, `mustEnrollTwoFactor` when it applies, and the token for `X-Svc-Client`. */
export const LoginResponseSchema = Type.Composite([
  UserSchema,
  Type.Object({ mustEnrollTwoFactor: MustEnrollSchema, token: Type.Optional(Type.String()) }),
])
