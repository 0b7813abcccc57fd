/**
 * `npm start`. It applies the runtime settings first (runtime.ts: a restart in place when one is missing), then
 * imports the daemon, so nothing is loaded twice.
 */
import { applyRuntimeSettings } from './runtime.ts'

applyRuntimeSettings()
await import('./daemon.ts')
