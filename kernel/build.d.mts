/** Types of the daemon's build runner (kernel/build.mjs) for the TypeScript that calls it (tests, bench). */
export function buildDaemon(options?: { ifChanged?: boolean; log?: (line: string) => void }): Promise<{ built: boolean }>
