import Ajv, { type ValidateFunction } from 'ajv'
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import addFormats from 'ajv-formats'
import type { FastifySchemaCompiler, FastifyServerOptions } from 'fastify'

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

/**
 * Schemas are compiled on their route's first use, not when the route is registered: compiling every route's
 * validators and serializers was about a fifth of the daemon's start (docs/ARCHITECTURE.md, "Runtime"), for routes
 * most starts never see. A schema is still checked against the JSON Schema meta-schema at registration, so a
 * malformed one fails its plugin's load as before instead of failing its first request.
 */
function checkSchema(schema: unknown): void {
  if (!strict.validateSchema(schema as object)) throw new Error(`invalid schema: ${strict.errorsText(strict.errors)}`)
}

export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  checkSchema(schema)
  const ajv = httpPart === 'body' ? strict : coercing
  let compiled: ValidateFunction | undefined
  // Fastify reads `errors` from the function it was given after a failed validation.
  const validate = Object.assign((data: unknown) => {
    compiled ??= ajv.compile(schema)
    const valid = compiled(data)
    validate.errors = compiled.errors
    return valid
  }, { errors: null as ValidateFunction['errors'] })
  return validate
}

type ValidatorFactory = NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']>
/**
 * Fastify's validator factory: every instance gets the compiler above. (Fastify calls what the factory returns with
 * the route's schema and part, as it calls a compiler given to setValidatorCompiler; its typings describe Ajv's own
 * compile function instead.)
 */
export const buildValidator = (() => validatorCompiler) as unknown as ValidatorFactory

const buildDefaultSerializer = SerializerSelector()
/** Fastify's own serializer factory (fast-json-stringify, with the shared schemas), each route's compiled on first use. */
export const buildSerializer: typeof buildDefaultSerializer = (externalSchemas, options) => {
  const compile = buildDefaultSerializer(externalSchemas, options)
  return (route) => {
    checkSchema(route.schema)
    let serialize: ((doc: unknown) => string) | undefined
    return (doc) => (serialize ??= compile(route))(doc)
  }
}

const queryValidators = new WeakMap<object, ReturnType<typeof coercing.compile>>()
/** A coercing validator for a socket's query schema, compiled once per schema object. */
export function compileQueryValidator(schema: object) {
  let validate = queryValidators.get(schema)
  if (!validate) queryValidators.set(schema, (validate = coercing.compile(schema)))
  return validate
}
