/**
 * `npm start` runs this file's build, kernel/dist/main.mjs (kernel/build.mjs); `node kernel/src/main.ts` runs the
 * sources. It applies the runtime settings first (runtime.ts: a restart in place when one is missing), then imports
 * the daemon, so nothing is loaded twice.
 */
import { applyRuntimeSettings } from './runtime.ts'

applyRuntimeSettings()
// Stack traces name the TypeScript lines: kernel/build.mjs writes a source map beside each built file. Enabled here
// rather than by a flag so that it holds however the daemon is started; harmless when running the sources.
process.setSourceMapsEnabled(true)
// A daemon that cannot even load (a file missing from its build) still ends with one line saying so.
await import('./daemon.ts').catch((err: unknown) => {
  process.stderr.write(`hostd: failed to start: could not load the daemon: ${(err as Error).message}\n`)
  process.exitCode = 1
})
