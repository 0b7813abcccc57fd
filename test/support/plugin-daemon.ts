/**
 * The real daemon (`npm start`'s entry) serving only some built-in plugins (HOSTD_BUILTIN_PLUGINS=a,b), for tests
 * and benches that measure the daemon process itself (its RSS, its sockets). They load as built-ins, from plugins/,
 * as in production (with their compiled pages).
 */
import { startDaemon, type Daemon } from './daemon.ts'

export interface PluginDaemon extends Daemon {
  /** A bearer token of the admin created at setup. */
  adminToken: string
}

const ADMIN = { username: 'admin', password: 'plugin daemon password' }

export async function startPluginDaemon(plugins: string[], env: Record<string, string> = {}): Promise<PluginDaemon> {
  const daemon = await startDaemon({ env: { HOSTD_BUILTIN_PLUGINS: plugins.join(','), ...env } })
  const post = (path: string, headers: Record<string, string> = {}) =>
    daemon.fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(ADMIN),
    })
  try {
    const setup = await post('/api/setup')
    if (setup.status !== 201) throw new Error(`setup answered ${setup.status}: ${await setup.text()}`)
    const login = await post('/api/auth/login', { 'x-svc-client': 'plugin-daemon' })
    const { token } = (await login.json()) as { token: string }
    return Object.assign(daemon, { adminToken: token })
  } catch (err) {
    await daemon.stop()
    throw err
  }
}
