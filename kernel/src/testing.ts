import { randomBytes } from 'node:crypto'
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join, resolve } from 'node:path'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { inject, type InjectOptions, type Response } from 'light-my-request'
import pino from 'pino'
import type { HostdPlugin, Role, ServiceBinding } from '@hostd/sdk'
import { loadConfig } from './config.ts'
import { createKernel, type Kernel } from './kernel.ts'

export interface TestKernelOptions {
  /** Plugin definitions to run, as imported by the test. */
  plugins?: HostdPlugin[]
  /**
   * Plugin folders to run as third-party plugins, as if dropped into the plugins folder (each is copied there): each
   * runs in a sandboxed process of its own (docs/ARCHITECTURE.md, "Third-party plugins: the trust boundary"), or in
   * the kernel's process with `env: { HOSTD_PLUGINS_ISOLATION: 'off' }`. A plugin test can run in both modes.
   */
  thirdParty?: string[]
  /**
   * Fakes for services the plugins depend on (Backstage's `mockServices`): `[bind(tokens.helper, fakeHelper)]`. Each
   * replaces the kernel's service or another plugin's for every plugin, in `deps` and `optional.get` alike. A
   * provider named in `dependsOn` must still be loaded (or a stand-in plugin with its id and version).
   */
  services?: ServiceBinding[]
  /** Extra HOSTD_* variables. */
  env?: Record<string, string>
  /** Listen on a loopback port (for WebSockets); `tls` makes it HTTPS with a generated certificate. */
  listen?: boolean
  tls?: boolean
  /**
   * `inject` sends every request over a real HTTP(S) connection to the listening kernel instead of in-process:
   * the same calls, the whole network path (implies `listen`).
   */
  overNetwork?: boolean
}

export interface TestRequest extends Omit<InjectOptions, 'method'> {
  method?: InjectOptions['method']
  /** Send as this role's test user (signed in with a bearer token), or with this raw token. */
  as?: Role | { token: string }
}

/**
 * A sample request for one route, used by the route-table test (test/route-table.test.ts) to prove the route's
 * role: it must answer 401 signed out, 403 below its role, and 2xx (or one of `ok`) at or above it. A plugin
 * ships its samples in `test/route-samples.ts` as `export const samples: RouteSamples`, keyed
 * `'<METHOD> <path as declared>'`; the sample runs once per role, so it must be repeatable.
 */
export interface RouteSampleContext {
  t: TestKernel
  /** A fresh viewer user's id, for routes that change a user. */
  freshUser(): Promise<string>
  /** The user the sample's request is sent as, when the test knows it (routes about your own account need it). */
  userId?: string
}
export interface RouteSampleRequest {
  url: string
  body?: unknown
  /** A raw body instead of JSON, with its content type. */
  raw?: Buffer
  contentType?: string
  /** Statuses that count as success for an allowed role besides 2xx (for example 503 with no engine, 423 with no helper). */
  ok?: number[]
}
export type RouteSamples = Record<string, (ctx: RouteSampleContext) => Promise<RouteSampleRequest>>

export interface TestKernel {
  kernel: Kernel
  /** Set when `listen` was asked for. */
  url: string | null
  /** Calls a route in-process through the same dispatcher the server uses. */
  inject(request: TestRequest): Promise<Response>
  /** A fresh user of that role and a session token for it. */
  login(role: Role, username?: string): Promise<{ token: string; userId: string; username: string }>
  close(): Promise<void>
}

/**
 * Boots a real kernel (SQLite file in a temporary folder, real auth, real route checks) with just the given
 * plugins, in a few lines (Backstage's startTestBackend):
 *
 *   const t = await startTestKernel({ plugins: [myPlugin] })
 *   const res = await t.inject({ url: '/api/hello', as: 'viewer' })
 */
export async function startTestKernel(options: TestKernelOptions = {}): Promise<TestKernel> {
  const dataDir = await mkdtemp(join(tmpdir(), 'hostd-test-'))
  const config = loadConfig({
    HOSTD_DATA_DIR: dataDir,
    HOSTD_PORT: '0',
    HOSTD_HOST: '127.0.0.1',
    HOSTD_HELPER_SOCKET: join(dataDir, 'no-helper.sock'),
    HOSTD_BUILTIN_PLUGINS: '0',
    ...options.env,
  })
  for (const folder of options.thirdParty ?? [])
    await cp(folder, join(config.pluginsDir, basename(resolve(folder))), { recursive: true })
  const kernel = await createKernel(config, {
    plugins: options.plugins,
    insecureHttp: !options.tls,
    watch: false,
    serviceOverrides: options.services,
    logger: pino({ level: process.env.HOSTD_TEST_LOG ?? 'silent' }),
  })
  const url = options.listen || options.overNetwork ? await kernel.listen() : null
  const overNetwork = options.overNetwork === true
  const tokens = new Map<Role, string>()
  let users = 0

  const login: TestKernel['login'] = async (role, username = `${role}-${++users}`) => {
    const user = await kernel.services.users.create(username, randomBytes(12).toString('base64url'), role)
    return { token: kernel.services.sessions.create(user.id, '127.0.0.1'), userId: user.id, username }
  }

  return {
    kernel,
    url,
    login,
    async inject({ as, headers, ...request }) {
      let token: string | undefined
      if (typeof as === 'string') {
        token = tokens.get(as)
        if (!token) tokens.set(as, (token = (await login(as)).token))
      } else if (as) token = as.token
      const options = {
        method: 'GET',
        ...request,
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
      } as InjectOptions
      return url && overNetwork ? sendOverNetwork(url, options) : inject(kernel.handler, options)
    },
    async close() {
      await kernel.close()
      await rm(dataDir, { recursive: true, force: true })
    },
  }
}

/**
 * One request over a real connection, answered in light-my-request's Response shape, so a test reads the same
 * fields either way. Payload rules follow light-my-request: an object is sent as JSON.
 */
async function sendOverNetwork(base: string, options: InjectOptions): Promise<Response> {
  const target = new URL(String(options.url ?? '/'), base)
  for (const [k, v] of Object.entries((options.query ?? {}) as Record<string, string | string[]>)) {
    for (const one of Array.isArray(v) ? v : [v]) target.searchParams.append(k, one)
  }
  const headers: Record<string, string | string[]> = {}
  for (const [k, v] of Object.entries(options.headers ?? {}))
    if (v !== undefined) headers[k.toLowerCase()] = v as string | string[]
  let body: Buffer | undefined
  const payload = options.payload ?? options.body
  if (payload !== undefined && payload !== null) {
    if (Buffer.isBuffer(payload)) body = payload
    else if (typeof payload === 'string') body = Buffer.from(payload)
    else if (typeof payload === 'object' && !('pipe' in payload)) {
      body = Buffer.from(JSON.stringify(payload))
      headers['content-type'] ??= 'application/json'
    } else throw new Error('overNetwork: stream payloads are not supported; pass a Buffer')
    headers['content-length'] ??= String(body.length) // a test may declare another length on purpose
  }
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise((resolve, reject) => {
    const req = send(target, { method: options.method ?? 'GET', headers, rejectUnauthorized: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('error', reject)
      res.on('end', () => {
        const rawPayload = Buffer.concat(chunks)
        const text = rawPayload.toString('utf8')
        resolve({
          raw: { req, res },
          rawPayload,
          payload: text,
          body: text,
          statusCode: res.statusCode ?? 0,
          statusMessage: res.statusMessage ?? '',
          headers: res.headers,
          trailers: res.trailers,
          cookies: [],
          json: () => JSON.parse(text),
          stream: () => {
            throw new Error('overNetwork: stream() is not supported')
          },
        } as unknown as Response)
      })
    })
    req.on('error', reject)
    req.end(body)
  })
}
