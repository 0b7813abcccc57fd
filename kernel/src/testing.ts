import { randomBytes } from 'node:crypto'
import { cp, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join, resolve } from 'node:path'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { inject, type InjectOptions, type Response } from 'light-my-request'
import pino from 'pino'
import type { Static } from '@sinclair/typebox'
import type { HostdPlugin, Role, ServiceBinding } from '@hostd/sdk'
import { loadConfig } from './config.ts'
import { createKernel, type Kernel } from './kernel.ts'
import type { ExtensionSchema } from './plugins/routes.ts'

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
  /**
   * Watch the plugins folder as the daemon does: a file changed in an installed plugin's folder (`t.plugins.folder`)
   * reloads it after a quiet moment; poll its outcome with `eventually`. Off by default: `t.plugins.reload` does the
   * same at once.
   */
  watch?: boolean
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

/** A plugin's entry in `GET /api/extensions`, as an admin sees it: `state`, `version`, `error`, `errorOrigin`, `ui`... */
export type ExtensionEntry = Static<typeof ExtensionSchema>

/**
 * Installs, upgrades, reloads and removes third-party plugins the way the daemon does, each awaiting the outcome and
 * answering the plugin's `GET /api/extensions` entry. A plugin that fails to load is an answer too (`state: 'failed'`,
 * with `error` and `errorOrigin`); a request the daemon refuses (not a plugin package, say) throws with its code.
 */
/** How `t.plugins.install` and `upgrade` treat a version the daemon holds for an admin's approval. */
export interface InstallOptions {
  /** Approve it as the admin (true), or leave it held (false). Default: true for a first install, false for an upgrade. */
  approve?: boolean
}

export interface TestPlugins {
  /**
   * Installs a plugin as `POST /api/extensions/install` (the Plugins page's upload) does, from a tarball (`npm pack`
   * output: a .tgz with package.json at its root or under package/) or from a folder, which is packed first: all of
   * it but `node_modules` and dot-files (test what `npm pack` ships, its `files`, by installing its tarball). It runs
   * sandboxed unless the kernel has `env: { HOSTD_PLUGINS_ISOLATION: 'off' }`. Installing over an installed version
   * upgrades it.
   *
   * The daemon holds a first install that declares services of other plugins, helper actions or network until an admin
   * approves it, and an upgrade that asks for more than was granted. `approve` says what the harness does with such a
   * held version: approve it as the admin would on the Plugins page (`POST /api/extensions/:id/approve`), or leave it
   * held (the entry then has `approval`). Default: a held first install is approved, a held upgrade is not.
   */
  install(source: string, options?: InstallOptions): Promise<ExtensionEntry>
  /** Installs a new version of the installed plugin `id` from a tarball or a folder; throws if `id` is not installed. */
  upgrade(id: string, source: string, options?: InstallOptions): Promise<ExtensionEntry>
  /**
   * Loads plugin `id` again from its folder if its files changed, as the daemon's watcher does on a file change (edit
   * the files in `folder(id)` first). A reload that fails retires the version that ran: the entry says why.
   */
  reload(id: string): Promise<ExtensionEntry>
  /** Removes plugin `id` as `POST /api/extensions/:id/remove` does (its folder deleted, the plugin unloaded). */
  remove(id: string): Promise<void>
  /** The folder plugin `id` was installed to, inside the kernel's plugins folder: edit its files, then `reload`. */
  folder(id: string): string
  /** Plugin `id`'s entry in `GET /api/extensions` now, or undefined when it is not listed. */
  entry(id: string): Promise<ExtensionEntry | undefined>
}

export interface TestKernel {
  kernel: Kernel
  /** Set when `listen` was asked for. */
  url: string | null
  /** Calls a route in-process through the same dispatcher the server uses. */
  inject(request: TestRequest): Promise<Response>
  /** A fresh user of that role and a session token for it. */
  login(role: Role, username?: string): Promise<{ token: string; userId: string; username: string }>
  /** Install, upgrade, reload and remove third-party plugins as the daemon does. */
  plugins: TestPlugins
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
    watch: options.watch === true,
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

  const injectAs: TestKernel['inject'] = async ({ as, headers, ...request }) => {
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
  }

  return {
    kernel,
    url,
    login,
    inject: injectAs,
    plugins: testPlugins(kernel, injectAs, login),
    async close() {
      await kernel.close()
      await rm(dataDir, { recursive: true, force: true })
    },
  }
}

/** `t.plugins`: every change through the route or the registry call the daemon itself uses. */
function testPlugins(kernel: Kernel, send: TestKernel['inject'], login: TestKernel['login']): TestPlugins {
  const installed = (id: string) => {
    const record = kernel.registry.find(id)
    if (!record) throw new Error(`plugin "${id}" is not installed`)
    if (!record.dir || record.builtin)
      throw new Error(
        `plugin "${id}" was not installed from a folder or a tarball: it has nothing to reload or replace`,
      )
    return record
  }
  const entry = async (id: string) => {
    const res = await send({ url: '/api/extensions', as: 'admin' })
    return (res.json() as ExtensionEntry[]).find((e) => e.id === id)
  }
  const install = async (source: string, options: InstallOptions = {}) => {
    const res = await send({
      method: 'POST',
      url: '/api/extensions/install',
      as: 'admin',
      headers: { 'content-type': 'application/gzip' },
      payload: await archiveOf(source),
    })
    if (res.statusCode !== 201) throw refused(`installing ${source}`, res)
    const answer = res.json() as ExtensionEntry
    const held = answer.approval
    if (held && (options.approve ?? held.granted === null)) {
      // Approval asks for a recent sign-in: a fresh admin session has one, however long the test has run.
      const approved = await send({
        method: 'POST',
        url: `/api/extensions/${answer.id}/approve`,
        as: { token: (await login('admin')).token },
        payload: { version: held.version },
      })
      if (approved.statusCode !== 200) throw refused(`approving ${answer.id} ${held.version}`, approved)
    }
    return (await entry(answer.id)) ?? answer // as listed (a failed plugin's dormantPages too)
  }
  return {
    install,
    async upgrade(id, source, options) {
      installed(id)
      const upgraded = await install(source, options)
      if (upgraded.id !== id) throw new Error(`${source} installed plugin "${upgraded.id}", not a version of "${id}"`)
      return upgraded
    },
    async reload(id) {
      const record = installed(id)
      await kernel.registry.reconcile(record.dir!, false)
      const reloaded = await entry(id)
      if (!reloaded) throw new Error(`plugin "${id}" is no longer listed: its folder ${record.dir} is gone`)
      return reloaded
    },
    async remove(id) {
      installed(id)
      const res = await send({ method: 'POST', url: `/api/extensions/${id}/remove`, as: 'admin', payload: {} })
      if (res.statusCode >= 300) throw refused(`removing ${id}`, res)
    },
    folder: (id) => installed(id).dir!,
    entry,
  }
}

/** The archive to upload for `source`: a tarball as it is, or a folder packed as `npm pack` lays one out (package/). */
async function archiveOf(source: string): Promise<Buffer> {
  const info = await stat(source).catch(() => null)
  if (!info) throw new Error(`${source}: no such file or folder`)
  if (info.isFile()) return readFile(source)
  const { create } = await import('tar')
  const skipped = (path: string) => path.split('/').some((part) => part === 'node_modules' || /^\.[^./]/.test(part))
  const names = (await readdir(source)).filter((name) => !skipped(name))
  const chunks: Buffer[] = []
  const pack = create(
    { gzip: true, cwd: source, prefix: 'package', portable: true, follow: true, filter: (path) => !skipped(path) },
    names,
  )
  for await (const chunk of pack) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/** An error for a request the daemon refused, with its status and code. */
function refused(what: string, res: Response): Error {
  let body: { error?: string; message?: string } = {}
  try {
    body = res.json()
  } catch {}
  return Object.assign(new Error(`${what}: ${res.statusCode} ${body.error ?? ''} ${body.message ?? res.body}`.trim()), {
    statusCode: res.statusCode,
    code: body.error,
  })
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
