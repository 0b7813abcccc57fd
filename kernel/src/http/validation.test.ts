import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'
import { Type } from '@hostd/sdk'
import { GENERATED, metaSchemaValidatorSource } from '../../meta-schema.mjs'
import { validatorCompiler } from './validation.ts'

const { default: Ajv } = createRequire(import.meta.url)('ajv') as typeof import('ajv')

const SCHEMAS: Record<string, unknown> = {
  typebox: Type.Object({
    name: Type.String({ minLength: 1, pattern: '^[a-z]+$' }),
    tags: Type.Array(Type.String(), { uniqueItems: true }),
  }),
  union: Type.Union([Type.Literal('a'), Type.Null()]),
  empty: {},
  unknownType: { type: 'nonsense' },
  typeNotString: { type: 'object', properties: { a: { type: 12 } } },
  negativeLength: { type: 'string', minLength: -1 },
  emptyEnum: { enum: [] },
  repeatedEnum: { enum: ['a', 'a'] },
  requiredTwice: { type: 'object', required: ['a', 'a'] },
  notAnObject: 'string',
}
const compile = (schema: unknown) =>
  validatorCompiler({ schema: schema as object, httpPart: 'body', url: '/', method: 'POST' })

describe('route schemas are checked against the meta-schema as their route is mounted', () => {
  it('by the validator generated from the installed Ajv: kernel/meta-schema.mjs writes what is committed', () => {
    expect(readFileSync(GENERATED, 'utf8')).toBe(metaSchemaValidatorSource())
  })

  it('accepting and refusing the schemas Ajv itself accepts and refuses', () => {
    const ajv = new Ajv({ strict: false })
    for (const [name, schema] of Object.entries(SCHEMAS)) {
      const ajvAccepts = ajv.validateSchema(schema as object) as boolean
      const mounted = (() => {
        try {
          compile(schema)
          return true
        } catch (err) {
          expect((err as Error).message).toMatch(/^invalid schema: schema/)
          return false
        }
      })()
      expect({ name, mounted }).toEqual({ name, mounted: ajvAccepts })
    }
    expect(Object.values(SCHEMAS).filter((s) => !ajv.validateSchema(s as object)).length).toBe(7)
  })

  it('naming where a schema is wrong', () => {
    expect(() => compile(SCHEMAS.typeNotString)).toThrow(/schema\/properties\/a\/type/)
  })
})
