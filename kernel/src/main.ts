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
await import('./daemon.ts')
