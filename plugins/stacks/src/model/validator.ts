/**
 * The compose specification's JSON schema, as the dclint package ships it (`schemas/compose.schema.json`, which
 * that project refreshes from compose-spec/compose-spec with its `update-compose-schema` script), checked with
 * Ajv. Both are loaded on the first validation, not at the daemon's start.
 */
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { ValidateFunction } from 'ajv'

export interface SchemaIssue {
  path: string
  message: string
}

/** The schema file's path (resolved through the package, whatever its `exports` allow). */
export function composeSchemaPath(): string {
  const require = createRequire(import.meta.url)
  return join(dirname(require.resolve('dclint/package.json')), 'schemas', 'compose.schema.json')
}

export class ComposeValidator {
  #compiled: Promise<ValidateFunction> | null = null

  #compile(): Promise<ValidateFunction> {
    this.#compiled ??= (async () => {
      const schema = JSON.parse(await readFile(composeSchemaPath(), 'utf8')) as Record<string, unknown>
      delete schema.$schema
      const mod = (await import('ajv')) as unknown as { default: { default?: unknown } }
      const Ajv = (mod.default.default ?? mod.default) as new (o: object) => { compile(s: object): ValidateFunction }
      return new Ajv({ allErrors: true, strict: false, validateFormats: false }).compile(schema)
    })()
    return this.#compiled
  }

  /** The schema's complaints about `file` (already interpolated), one per place, most specific first. */
  async validate(file: unknown): Promise<SchemaIssue[]> {
    const validate = await this.#compile()
    if (validate(file)) return []
    const byPath = new Map<string, SchemaIssue>()
    for (const err of validate.errors ?? []) {
      if (err.keyword === 'oneOf' || err.keyword === 'anyOf' || err.keyword === 'if') continue
      const segments = err.instancePath
        .split('/')
        .slice(1)
        .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
      let path = segments
        .map((s, i) => (/^\d+$/.test(s) && i > 0 ? `[${s}]` : `.${s}`))
        .join('')
        .replace(/^\./, '')
      let message: string
      if (err.keyword === 'additionalProperties') {
        const key = String((err.params as { additionalProperty?: string }).additionalProperty)
        path = path ? `${path}.${key}` : key
        message = `${path} is not a key the compose specification knows`
      } else {
        message = `${path || 'the file'} ${err.message ?? 'is invalid'}`
      }
      // The first complaint about a place is kept: a value that fits none of a oneOf's forms gets one line.
      if (!byPath.has(path)) byPath.set(path, { path, message })
    }
    return [...byPath.values()]
  }
}
