/**
 * `npm start` runs this file's build, kernel/dist/main.mjs (kernel/build.mjs); `node kernel/src/main.ts` runs the
 * sources. It applies the runtime settings first (runtime.ts: a restart in place when one is missing), then imports
 * the daemon, so nothing is loaded twice.
 */
import { createRequire } from 'node:module'
import { applyRuntimeSettings } from './runtime.ts'

applyRuntimeSettings()
// better-sqlite3 picks its binary by asking process.report whether the C library is musl, and the report formats the
// JavaScript stack. With source maps on, that parses the daemon's whole map and keeps it for the process's life
// (about 6 MiB of the idle RSS, measured). So its binary is loaded here, before source maps are turned on; the ORM's
// connection reuses the loaded binary.
const BetterSqlite3 = createRequire(import.meta.url)('better-sqlite3')
new BetterSqlite3(':memory:').close()
// Stack traces name the TypeScript lines: kernel/build.mjs writes a source map beside each built file. Enabled here
// rather than by a flag so that it holds however the daemon is started; harmless when running the sources.
process.setSourceMapsEnabled(true)
// A daemon that cannot even load (a file missing from its build) still ends with one line saying so.
await import('./daemon.ts').catch((err: unknown) => {
  process.stderr.write(`hostd: failed to start: could not load the daemon: ${(err as Error).message}\n`)
  process.exitCode = 1
})
