/** The JSON Schema copy of the catalog format, as written to catalog.schema.json (a test checks the file matches). */
import { CatalogFileSchema } from '../src/schemas.ts'

export function catalogJsonSchema(): string {
  return `${JSON.stringify({ $schema: 'https://json-schema.org/draft/2020-12/schema', ...JSON.parse(JSON.stringify(CatalogFileSchema)) }, null, 2)}\n`
}

if (process.argv[1] === import.meta.filename) process.stdout.write(catalogJsonSchema())
