import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv'
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import addFormats from 'ajv-formats'
import type { FastifySchemaCompiler, FastifyServerOptions } from 'fastify'
import generatedMetaSchemaValidator from './meta-schema.generated.ts'

/**
 * Route schemas are compiled on their route's first use, not when the route is mounted: compiling every route's
 * validators and serializers was about a fifth of the daemon's start (docs/decisions/measurements.md, "Runtime"), for routes
 * most starts never see. A schema is still checked against the JSON Schema meta-schema as its route is mounted, so a
 * malformed one fails its plugin's load instead of its first request: by the meta-schema's validator compiled ahead
 * of time (meta-schema.generated.ts, from kernel/meta-schema.mjs), once per schema object (routes share theirs).
 * The modules themselves load with the kernel: loaded on the first compile instead, fast-json-stringify (which loads
 * Ajv) took 30-40 ms off a start, but every later request cost 6-7 µs more CPU (GET /api/auth/me, 53 -> 60 µs, medians
 * of five processes, reproduced three times; the cause was not found).
 */
const validateMetaSchema = generatedMetaSchemaValidator as ((schema: unknown) => boolean) & {
  errors: ErrorObject[] | null
}

const checked = new WeakSet<object>()
function checkSchema(schema: unknown): void {
  const isObject = typeof schema === 'object' && schema !== null
  if (isObject && checked.has(schema)) return
  if (!validateMetaSchema(schema)) {
    const problems = (validateMetaSchema.errors ?? []).map((e) => `schema${e.instancePath} ${e.message}`).join(', ')
    throw new Error(`invalid schema: ${problems}`)
  }
  if (isObject) checked.add(schema)
}

/**
 * Two shared Ajv instances for every Fastify instance (kernel and plugins), made on the first compile:
 * bodies are validated strictly (no coercion, unknown fields are errors, never silently dropped);
 * query strings, params and headers arrive as text, so they are coerced to the declared types.
 */
let instances: { strict: Ajv.default; coercing: Ajv.default } | undefined
function ajv(coerce: boolean): Ajv.default {
  instances ??= { strict: makeAjv(false), coercing: makeAjv(true) }
  return coerce ? instances.coercing : instances.strict
}

function makeAjv(coerce: boolean): Ajv.default {
  const instance = new Ajv.default({
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    allErrors: false,
    strict: false,
  })
  addFormats.default(instance)
  return instance
}

export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  checkSchema(schema)
  let compiled: ValidateFunction | undefined
  // Fastify reads `errors` from the function it was given after a failed validation.
  const validate = Object.assign(
    (data: unknown) => {
      compiled ??= ajv(httpPart !== 'body').compile(schema)
      const valid = compiled(data)
      validate.errors = compiled.errors
      return valid
    },
    { errors: null as ValidateFunction['errors'] },
  )
  return validate
}

type ValidatorFactory = NonNullable<
  NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']
>
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

const queryValidators = new WeakMap<object, ValidateFunction>()
/** A coercing validator for a socket's query schema, compiled once per schema object. */
export function compileQueryValidator(schema: object) {
  let validate = queryValidators.get(schema)
  if (!validate) queryValidators.set(schema, (validate = ajv(true).compile(schema)))
  return validate
}
