/** Types of the build runner (ui/build.mjs) for the TypeScript that calls it (tests, bench). */
export const DIST: string
export function hashInputs(paths: string[], extra?: string[]): string
export function compressTree(root: string): Promise<void>
export function buildUi(options?: { ifChanged?: boolean; log?: (line: string) => void }): Promise<{ built: boolean; dir: string }>
