import Ajv from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'

/**
 * Two shared Ajv instances for every Fastify instance (kernel and plugins):
 * bodies are validated strictly (no coercion, unknown fields are errors, never silently dropped);
 * query strings, params and headers arrive as text, so they are coerced to the declared types.
 */
function makeAjv(coerce: boolean) {
  const ajv = new Ajv.default({
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    allErrors: false,
    strict: false,
  })
  addFormats.default(ajv)
  return ajv
}

const strict = makeAjv(false)
const coercing = makeAjv(true)

export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? strict : coercing).compile(schema)

const queryValidators = new WeakMap<object, ReturnType<typeof coercing.compile>>()
/** A coercing validator for a socket's query schema, compiled once per schema object. */
export function compileQueryValidator(schema: object) {
  let validate = queryValidators.get(schema)
  if (!validate) queryValidators.set(schema, (validate = coercing.compile(schema)))
  return validate
}
