import { watch } from 'chokidar'
import { join, relative, sep } from 'node:path'
import type { Logger } from 'pino'
import { folderState } from './loader.ts'

export interface PluginWatcher {
  close(): Promise<void>
}

/**
 * How long a plugin folder must be quiet before it is (re)loaded: no file event for this long, and then either
 * nothing in it changed for this long (by the files' own change times) or its digest is the same as at the last
 * look. A copy in progress keeps sending events and changing times, so it is not loaded half-done unless the
 * copying stalls for longer than this (then the load fails or is partial, and the rest of the copy reloads it);
 * a folder moved in by one rename, or a deletion, is acted on after one quiet period. Measured by
 * `npm run bench` (test/bench/README.md, "Plugin hot-swap").
 */
export const QUIET_MS = 50

/**
 * Watches the plugins dir: a folder dropped in is loaded, a changed one upgraded, a deleted one unloaded.
 * Events are grouped per top-level folder (a symbolic link to a folder included); dot-folders (install staging) are
 * ignored.
 */
export async function watchPlugins(
  root: string,
  reconcile: (dir: string) => Promise<unknown>,
  log: Logger,
): Promise<PluginWatcher> {
  const timers = new Map<string, NodeJS.Timeout>()
  /** The digest seen at a look that found the folder still changing: the same digest next time means settled. */
  const seen = new Map<string, string>()
  let closed = false
  const later = (dir: string) => {
    clearTimeout(timers.get(dir))
    timers.set(
      dir,
      setTimeout(() => void look(dir), QUIET_MS),
    )
  }
  const look = async (dir: string) => {
    timers.delete(dir)
    try {
      const state = await folderState(dir)
      if (closed || timers.has(dir)) return // new events meanwhile: their timer looks again
      if (state && Date.now() - state.changedAt < QUIET_MS && seen.get(dir) !== state.print) {
        seen.set(dir, state.print)
        later(dir)
        return
      }
      seen.delete(dir)
      await reconcile(dir)
    } catch (err) {
      log.error({ err, dir }, 'plugin reload failed')
    }
  }
  const watcher = watch(root, {
    ignoreInitial: true,
    depth: 8,
    // chokidar holds back unlink events 100 ms to report an editor's save-by-rename as one change; the quiet
    // period above already covers that, and removals should not wait for it.
    atomic: false,
    // A plugin folder that is a symbolic link (a working copy linked in) is watched through the link, every file of
    // it, as the start-time scan loads it (registry.ts, `loadFolder`).
    followSymlinks: true,
    ignored: (path: string) => {
      const rel = relative(root, path)
      return rel.split(sep).some((part) => part.startsWith('.') || part === 'node_modules')
    },
  })
  watcher.on('all', (_event, path) => {
    const top = relative(root, path).split(sep)[0]
    if (!top || top.startsWith('..')) return
    later(join(root, top))
  })
  watcher.on('error', (err) => log.error({ err }, 'plugin watcher error'))
  await new Promise<void>((resolve) => watcher.once('ready', () => resolve()))
  return {
    async close() {
      closed = true
      for (const timer of timers.values()) clearTimeout(timer)
      await watcher.close()
    },
  }
}
