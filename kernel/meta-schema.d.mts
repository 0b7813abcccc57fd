/** Types of kernel/meta-schema.mjs for the TypeScript that calls it (its test). */
export const GENERATED: string
export function metaSchemaValidatorSource(): string
