import { Mutex } from '@hostd/sdk'

const shared: Map<string, Mutex> = ((globalThis as Record<symbol, unknown>)[Symbol.for('hostd.skills.locks')] ??=
  new Map<string, Mutex>()) as Map<string, Mutex>

/**
 * One lock per data folder for the whole process: while a hot upgrade runs two versions of this plugin side by
 * side, the new one's start-up blob collection must not run in the middle of the old one's publish. Kept on
 * globalThis because each load of the plugin imports its own copy of this module.
 */
export function sharedMutex(key: string): Mutex {
  let mutex = shared.get(key)
  if (!mutex) shared.set(key, (mutex = new Mutex()))
  return mutex
}
