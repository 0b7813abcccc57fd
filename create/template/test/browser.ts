/**
 * A real daemon and a real browser for this plugin's page tests, from what `@hostd/sdk` installs: the packed daemon
 * (`@hostd/sdk/kernel/dist/main.mjs`, serving the dashboard) in a temporary data folder on a free loopback port, and
 * Chromium driven by playwright-core. Chromium is the system's (/usr/bin/chromium, or $CHROMIUM). The plugin is
 * copied into the daemon's plugins folder as an admin would drop it in, so it runs as every third-party plugin does:
 * in its sandboxed process, its page in the sandboxed frame.
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { request } from 'node:https'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { freePort } from '@hostd/sdk/testing'

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium'
export const hasChromium = existsSync(CHROMIUM)
const PASSWORD = 'correct horse battery'
const DAEMON = join(dirname(createRequire(import.meta.url).resolve('@hostd/sdk/package.json')), 'kernel/dist/main.mjs')

/** One JSON request to the daemon, accepting its self-signed certificate. */
function call(url: string, method: string, body?: unknown, token?: string): Promise<{ status: number; json: unknown }> {
  const payload = body === undefined ? undefined : JSON.stringify(body)
  const headers: Record<string, string> = { 'x-svc-client': 'plugin-test' }
  if (payload) headers['content-type'] = 'application/json'
  if (token) headers.authorization = `Bearer ${token}`
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, rejectUnauthorized: false }, (res) => {
      let text = ''
      res.setEncoding('utf8').on('data', (d: string) => (text += d))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : null }))
    })
    req.on('error', reject)
    req.end(payload)
  })
}

export interface PluginUi {
  url: string
  pluginsDir: string
  /** Copies a plugin folder (without node_modules) into the daemon's plugins folder: it loads within a second. */
  install(folder: string, name: string): Promise<void>
  /** A fresh user of `role`, signed in, in a new browser page at `path`. */
  open(role: 'viewer' | 'operator' | 'admin', path?: string): Promise<Page>
  close(): Promise<void>
}

export async function startPluginUi(): Promise<PluginUi> {
  const dataDir = await mkdtemp(join(tmpdir(), 'hostd-plugin-ui-'))
  const port = await freePort()
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('HOSTD_')) env[key] = value
  const daemon = spawn(process.execPath, [DAEMON], {
    env: {
      ...env,
      HOSTD_DATA_DIR: dataDir,
      HOSTD_HOST: '127.0.0.1',
      HOSTD_PORT: String(port),
      HOSTD_HELPER_SOCKET: join(dataDir, 'no-helper.sock'),
      HOSTD_BUILTIN_PLUGINS: '0',
      HOSTD_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  daemon.stdout.setEncoding('utf8').on('data', (d: string) => (output += d))
  daemon.stderr.setEncoding('utf8').on('data', (d: string) => (output += d))
  const exited = new Promise<void>((resolve) => daemon.once('exit', () => resolve()))
  let browser: Browser | null = null
  const stop = async () => {
    await browser?.close().catch(() => undefined)
    if (daemon.exitCode === null) daemon.kill('SIGTERM')
    await exited
    await rm(dataDir, { recursive: true, force: true })
  }
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const check = () => {
        const match = /^hostd \S+ serving (https:\/\/\S+)$/m.exec(output)
        if (match) resolve(match[1]!)
      }
      daemon.stdout.on('data', check)
      void exited.then(() => reject(new Error(`the daemon exited before serving:\n${output}`)))
    })
    const admin = { username: 'admin', password: PASSWORD }
    const setup = await call(`${url}/api/setup`, 'POST', admin)
    if (setup.status !== 201) throw new Error(`setup failed: ${setup.status} ${JSON.stringify(setup.json)}`)
    const login = async (account: { username: string; password: string }) => {
      const res = await call(`${url}/api/auth/login`, 'POST', account)
      if (res.status !== 200) throw new Error(`sign-in failed: ${res.status} ${JSON.stringify(res.json)}`)
      return (res.json as { token: string }).token
    }
    const adminToken = await login(admin)
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] })
    const pluginsDir = join(dataDir, 'plugins')
    let users = 0
    return {
      url,
      pluginsDir,
      async install(folder, name) {
        await cp(folder, join(pluginsDir, name), {
          recursive: true,
          filter: (src) => !src.includes('node_modules') && !src.endsWith('.tgz'),
        })
      },
      async open(role, path = '/') {
        const account = { username: `${role}${++users}`, password: PASSWORD }
        const made = await call(`${url}/api/users`, 'POST', { ...account, role }, adminToken)
        if (made.status !== 201)
          throw new Error(`creating a ${role} failed: ${made.status} ${JSON.stringify(made.json)}`)
        const token = await login(account)
        const context = await browser!.newContext({ ignoreHTTPSErrors: true, reducedMotion: 'reduce' })
        const { hostname } = new URL(url)
        await context.addCookies([
          {
            name: 'svc_session',
            value: token,
            domain: hostname,
            path: '/',
            httpOnly: true,
            secure: true,
            sameSite: 'Strict',
          },
        ])
        const page = await context.newPage()
        // Chromium drops loads in flight, even on loopback, when the machine's network interfaces change (a container
        // started elsewhere, say): navigate again then.
        for (let attempt = 1; ; attempt++) {
          try {
            await page.goto(new URL(path, url).href)
            return page
          } catch (err) {
            if (attempt >= 3 || !/ERR_NETWORK_CHANGED|interrupted by another navigation/.test(String(err))) throw err
          }
        }
      },
      close: stop,
    }
  } catch (err) {
    await stop()
    throw err
  }
}
