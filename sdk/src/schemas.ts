import { Type } from '@sinclair/typebox'

/**
 * The id form hostd generates (`crypto.randomUUID()`: lowercase, 36 characters): users, skills, drafts. An id param
 * with this schema answers 400 for anything else before a query runs.
 * @since 1.1.0
 */
export const UuidSchema = Type.String({
  pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$',
  minLength: 36,
  maxLength: 36,
  description: 'A lowercase UUID',
})
