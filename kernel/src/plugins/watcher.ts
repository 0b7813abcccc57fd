import { watch } from 'chokidar'
import { join, relative, sep } from 'node:path'
import type { Logger } from 'pino'

export interface PluginWatcher {
  close(): Promise<void>
}

/** Quiet time after the last file event in a plugin folder before it is (re)loaded: copies finish first. */
const SETTLE_MS = 250

/**
 * Watches the plugins dir: a folder dropped in is loaded, a changed one upgraded, a deleted one unloaded.
 * Events are grouped per top-level folder; dot-folders (staging) are ignored.
 */
export async function watchPlugins(root: string, reconcile: (dir: string) => Promise<unknown>, log: Logger): Promise<PluginWatcher> {
  const timers = new Map<string, NodeJS.Timeout>()
  const watcher = watch(root, {
    ignoreInitial: true,
    depth: 8,
    ignored: (path: string) => {
      const rel = relative(root, path)
      return rel.split(sep).some((part) => part.startsWith('.') || part === 'node_modules')
    },
  })
  watcher.on('all', (_event, path) => {
    const top = relative(root, path).split(sep)[0]
    if (!top || top.startsWith('..')) return
    const dir = join(root, top)
    clearTimeout(timers.get(dir))
    timers.set(
      dir,
      setTimeout(() => {
        timers.delete(dir)
        reconcile(dir).catch((err: unknown) => log.error({ err, dir }, 'plugin reload failed'))
      }, SETTLE_MS),
    )
  })
  watcher.on('error', (err) => log.error({ err }, 'plugin watcher error'))
  await new Promise<void>((resolve) => watcher.once('ready', () => resolve()))
  return {
    async close() {
      for (const timer of timers.values()) clearTimeout(timer)
      await watcher.close()
    },
  }
}
