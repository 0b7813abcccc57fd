/** Small helpers plugin tests share, with nothing but Node's own modules behind them (exported by `@hostd/sdk/testing`). */
import { mkdir, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { dirname, join } from 'node:path'

/**
 * Polls `fn` every `everyMs` until it answers a truthy value, and resolves with that value. No timing is asserted:
 * the test's own timeout bounds the wait, so a slow machine is not a failure.
 */
export async function eventually<T>(
  fn: () => T | null | undefined | false | Promise<T | null | undefined | false>,
  everyMs = 50,
): Promise<T> {
  for (;;) {
    const value = await fn()
    if (value) return value
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

/** A loopback TCP port nobody listens on right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}

export interface PluginFolder {
  /** The package name, e.g. `hostd-plugin-hello`. */
  name: string
  version?: string
  /** The entry file, relative to the folder (package.json `hostd.entry`); default `src/index.ts`. */
  entry?: string
  /** Files to write, by path relative to the folder: `{ 'src/index.ts': source, 'ui/page.js': '...' }`. */
  files?: Record<string, string>
}

/**
 * Writes a plugin folder as the kernel reads one: its package.json (ES module, `hostd.entry`) and `files`. For a
 * test's own fixture plugins (a broken one, one of another version); answers the folder.
 */
export async function writePluginFolder(dir: string, plugin: PluginFolder): Promise<string> {
  const { name, version = '1.0.0', entry = 'src/index.ts', files = {} } = plugin
  await mkdir(dir, { recursive: true })
  const pkg = { name, version, type: 'module', private: true, hostd: { entry } }
  await writeFile(join(dir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`)
  for (const [file, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, file)), { recursive: true })
    await writeFile(join(dir, file), text)
  }
  return dir
}
