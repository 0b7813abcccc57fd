/**
 * The real daemon (`npm start`'s entry) serving only some built-in plugins, for tests and benches that measure the
 * daemon process itself (its RSS, its sockets). The plugins' folders are copied into a plugins dir inside the
 * repository, so their imports (`@hostd/sdk`, their npm dependencies) resolve through the workspace.
 */
import { cp, mkdir, mkdtemp, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { REPO_ROOT, startDaemon, type Daemon } from './daemon.ts'

export interface PluginDaemon extends Daemon {
  /** A bearer token of the admin created at setup. */
  adminToken: string
}

const ADMIN = { username: 'admin', password: 'plugin daemon password' }

export async function startPluginDaemon(plugins: string[], env: Record<string, string> = {}): Promise<PluginDaemon> {
  await mkdir(join(REPO_ROOT, '.hostd-test'), { recursive: true })
  const work = await mkdtemp(join(REPO_ROOT, '.hostd-test', 'plugin-daemon-'))
  for (const name of plugins) {
    for (const part of ['src', 'package.json']) await cp(join(REPO_ROOT, 'plugins', name, part), join(work, 'plugins', name, part), { recursive: true })
  }
  let daemon: Daemon
  try {
    daemon = await startDaemon({ env: { HOSTD_PLUGINS_DIR: join(work, 'plugins'), ...env } })
  } catch (err) {
    await rm(work, { recursive: true, force: true })
    throw err
  }
  const stop = daemon.stop.bind(daemon)
  const post = (path: string, headers: Record<string, string> = {}) =>
    daemon.fetch(path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(ADMIN) })
  try {
    const setup = await post('/api/setup')
    if (setup.status !== 201) throw new Error(`setup answered ${setup.status}: ${await setup.text()}`)
    const login = await post('/api/auth/login', { 'x-svc-client': 'plugin-daemon' })
    const { token } = (await login.json()) as { token: string }
    return Object.assign(daemon, {
      adminToken: token,
      async stop(options?: { keepDataDir?: boolean }) {
        const code = await stop(options)
        await rm(work, { recursive: true, force: true })
        return code
      },
    })
  } catch (err) {
    await stop()
    await rm(work, { recursive: true, force: true })
    throw err
  }
}
