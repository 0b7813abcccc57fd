import { loadConfig, ConfigError } from './config.ts'
import { createKernel, REPO_ROOT } from './kernel.ts'

/** The daemon (main.ts imports it once the runtime settings are in place): one clear line and a non-zero exit for bad configuration, never a stack trace. */
async function runDaemon(): Promise<void> {
  const config = loadConfig(process.env, REPO_ROOT)
  const kernel = await createKernel(config)
  const url = await kernel.listen()
  process.stdout.write(`hostd ${kernel.services.version} serving ${url}\n`)
  if (await kernel.services.users.needsSetup())
    process.stdout.write(`no users yet: create the first admin: open ${url} in a browser, or POST ${url}/api/setup\n`)
  const stop = async (signal: string) => {
    process.stdout.write(`hostd: ${signal}, stopping\n`)
    await kernel.close()
    process.exit(0)
  }
  process.once('SIGTERM', () => void stop('SIGTERM'))
  process.once('SIGINT', () => void stop('SIGINT'))
  // A plugin's stray async error must not take the daemon down: log it and carry on.
  process.on('unhandledRejection', (err) => console.error('hostd: unhandled rejection:', err))
  process.on('uncaughtException', (err) => console.error('hostd: uncaught exception:', err))
}

void runDaemon().catch((err: unknown) => {
  const e = err as NodeJS.ErrnoException
  const line =
    err instanceof ConfigError
      ? err.message
      : e.code === 'EADDRINUSE'
        ? `port already in use (${e.message})`
        : e.code === 'EACCES'
          ? `permission denied: ${e.message}`
          : e.code === 'EADDRNOTAVAIL'
            ? `cannot bind that address: ${e.message}`
            : `failed to start: ${e.message}`
  process.stderr.write(`hostd: ${line}\n`)
  process.exit(1)
})
