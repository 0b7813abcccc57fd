/**
 * The entry of an isolated plugin's process. The kernel starts it inside the sandbox (kernel/src/isolation/sandbox.ts),
 * where only the Node runtime, the sdk and the plugin's folder are visible, and talks to it over the socket it
 * inherits as descriptor 3 (./protocol.ts). It imports the plugin's entry (the same `definePlugin` module as in the
 * daemon's process), runs `setup`, collects what `routes` and `sockets` declare, and from then on runs the handlers
 * for the requests the kernel forwards, already signed in, authorized and validated.
 *
 * The plugin shares this process with the runner and nothing else: whatever it breaks here (JSON.parse replaced, a
 * `then` on Object.prototype, a busy loop, process.exit) breaks only its own process, which the kernel watches and
 * restarts. The runner keeps its own references to what it needs before the plugin's code runs, so a plugin that
 * replaces a global cannot read or change the messages it does not own.
 *
 * It imports nothing but Node's modules and ./protocol.ts (no run-time imports there), so it starts fast.
 */
import { registerHooks } from 'node:module'
import { Socket } from 'node:net'
import { EventEmitter } from 'node:events'
import { writeSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import {
  ALLOWED_RESPONSE_HEADERS,
  CHANNEL_FD,
  encodeFrame,
  encodeText,
  FrameReader,
  MAX_KERNEL_FRAME,
  originOf,
  SANDBOX_PATHS,
  type ChildCall,
  type ChildMessage,
  type ErrorInfo,
  type KernelMessage,
  type PluginDescription,
  type PluginManifest,
  type RequestMessage,
} from './protocol.ts'

// ---- what the plugin must not be able to change under the runner: saved before its code runs ----
const parse = JSON.parse.bind(JSON)
const stringify = JSON.stringify.bind(JSON)
const realExit = process.exit.bind(process)
const SavedPromise = Promise
const { isArray } = Array
const { keys, entries, values, freeze, create, getPrototypeOf, getOwnPropertyNames } = Object
const ObjectPrototype = Object.prototype
const PLUGIN_BRAND = Symbol.for('hostd.plugin')
const ERROR_CODE = /^HOSTD_[A-Z0-9]+(_[A-Z0-9]+)+$/

type Hook = (...args: unknown[]) => unknown
interface Definition {
  id: string
  version: string
  kernel: string
  description?: string
  dependsOn?: Record<string, string>
  deps?: Record<string, { id: string }>
  ui?: unknown
  permissions?: unknown
  warnings?: readonly string[]
  entities?: unknown[]
  conditions?: { name: string; check: () => unknown }[]
  setup?: Hook
  provides?: Hook
  routes?: Hook
  sockets?: Hook
  start?: Hook
  stop?: Hook
}
interface DeclaredRoute {
  method: string
  path: string
  options: Record<string, unknown>
  handler: (req: unknown, reply: unknown) => unknown
}
interface DeclaredSocket {
  path: string
  options: Record<string, unknown> & { admit?: (admission: unknown) => unknown }
  handler: (socket: unknown, ctx: unknown) => unknown
}

const channel = new Socket({ fd: CHANNEL_FD, readable: true, writable: true })
const reader = new FrameReader(MAX_KERNEL_FRAME)

/**
 * The frames of one tick leave in one write: the requests of one read from the channel are answered in one callback
 * (a later turn of the event loop would only add latency here).
 */
let corked = false
const uncork = () => {
  corked = false
  channel.uncork()
}
function write(frame: Buffer): void {
  if (!corked) {
    corked = true
    channel.cork()
    process.nextTick(uncork)
  }
  channel.write(frame)
}

function send(message: ChildMessage): void {
  write(encodeFrame(message, stringify))
}

/**
 * Sends a last message before the process ends. Written directly to the descriptor when nothing else is queued on the
 * socket (so it leaves before exit), else queued like any other.
 */
function sendLast(message: ChildMessage): void {
  const frame = encodeFrame(message, stringify)
  // What this tick queued goes first (the stream tries to write it at once when uncorked).
  if (corked) {
    corked = false
    channel.uncork()
  }
  if (channel.writableLength === 0) {
    try {
      writeSync(CHANNEL_FD, frame)
      return
    } catch {
      // the socket's buffer is full: queue it instead
    }
  }
  channel.write(frame)
}

// ---- errors: what crosses is a message, a code and status for a HostdError, and where it was thrown ----

function errorInfo(err: unknown): ErrorInfo {
  const e = err as { name?: unknown; message?: unknown; code?: unknown; statusCode?: unknown; stack?: unknown } | null
  const message = typeof e?.message === 'string' ? e.message : String(err)
  const origin = originOf(typeof e?.stack === 'string' ? e.stack : undefined)
  const info: ErrorInfo = { message: message.slice(0, 4000) }
  if (origin) info.origin = origin
  if (
    e?.name === 'HostdError' &&
    typeof e.code === 'string' &&
    ERROR_CODE.test(e.code) &&
    typeof e.statusCode === 'number' &&
    e.statusCode >= 400 &&
    e.statusCode <= 599
  ) {
    info.code = e.code
    info.status = e.statusCode
  }
  return info
}

function die(err: unknown): never {
  const info = errorInfo(err)
  process.stderr.write(`${(err as Error)?.stack ?? String(err)}\n`)
  sendLast({ t: 'fatal', error: info })
  return realExit(1)
}

process.on('uncaughtException', die)
process.on('unhandledRejection', die)
// A plugin that ends its process says so (its own file:line), then ends: the kernel restarts it.
process.exit = ((code?: number | string | null) => {
  const origin = originOf(new Error().stack)
  sendLast({
    t: 'fatal',
    error: { message: `the plugin called process.exit(${code ?? ''})`, ...(origin ? { origin } : {}) },
  })
  realExit(typeof code === 'number' ? code : 0)
}) as typeof process.exit

// ---- the services an isolated plugin may have ----

let nextCall = 0
interface PendingCall {
  resolve: (value: unknown) => void
  reject: (err: Error) => void
  onEvent?: (event: unknown) => void
}
const calls = new Map<number, PendingCall>()

function callKernel(method: ChildCall['method'], args: unknown[], onEvent?: (event: unknown) => void) {
  const id = nextCall++
  return new SavedPromise<unknown>((resolve, reject) => {
    calls.set(id, { resolve, reject, ...(onEvent ? { onEvent } : {}) })
    send({ t: 'call', id, method, args } as ChildMessage)
  })
}

/** A refused kernel call as the plugin sees it: a HostdError's name, code and status when the kernel gave them. */
function kernelError(info: ErrorInfo | undefined): Error {
  const err = new Error(info?.message ?? 'the kernel refused the call') as Error & {
    code?: string
    statusCode?: number
  }
  if (info?.code && info.status) {
    err.name = 'HostdError'
    err.code = info.code
    err.statusCode = info.status
  }
  return err
}

/** A value as JSON can carry it (errors by message and stack; what does not serialize, as text). */
function plain(value: unknown): unknown {
  if (value instanceof Error) return { message: value.message, stack: value.stack }
  try {
    return parse(stringify(value) ?? 'null')
  } catch {
    return String(value)
  }
}

interface RunnerLogger {
  debug(obj: unknown, msg?: string): void
  info(obj: unknown, msg?: string): void
  warn(obj: unknown, msg?: string): void
  error(obj: unknown, msg?: string): void
  child(bindings: Record<string, unknown>): RunnerLogger
}

function logger(bindings: Record<string, unknown> = {}): RunnerLogger {
  const line = (level: 'debug' | 'info' | 'warn' | 'error') => (obj: unknown, msg?: string) => {
    let text = msg
    let data: Record<string, unknown> | undefined = { ...bindings }
    if (typeof obj === 'string' && msg === undefined) text = obj
    else if (obj instanceof Error) data.err = plain(obj)
    else if (obj && typeof obj === 'object') {
      for (const [k, v] of entries(obj)) data[k] = k === 'err' || v instanceof Error ? plain(v) : v
    } else if (obj !== undefined) data.value = obj
    data = plain(data) as Record<string, unknown>
    send({
      t: 'log',
      level,
      msg: String(text ?? '').slice(0, 8000),
      ...(data && keys(data).length > 0 ? { data } : {}),
    })
  }
  return {
    debug: line('debug'),
    info: line('info'),
    warn: line('warn'),
    error: line('error'),
    child: (more: Record<string, unknown>) => logger({ ...bindings, ...more }),
  }
}

const settings = {
  get: (key: string) => callKernel('settings.get', [key]),
  set: async (key: string, value: unknown) => {
    await callKernel('settings.set', [key, plain(value)])
  },
  delete: async (key: string) => {
    await callKernel('settings.delete', [key])
  },
}

/** The request id the kernel gave a forwarded request: an audit record with the request as actor names it. */
const REQUEST_ID = Symbol('hostd.request')

function auditActor(actor: unknown): unknown {
  if (!actor || typeof actor !== 'object') return null
  const request = (actor as Record<symbol, unknown>)[REQUEST_ID]
  if (typeof request === 'string') return { request }
  const a = actor as { userId?: unknown; username?: unknown; ip?: unknown; user?: { id?: unknown; username?: unknown } }
  const text = (v: unknown) => (typeof v === 'string' ? v : null)
  if (a.user) return { userId: text(a.user.id), username: text(a.user.username), ip: text(a.ip) }
  return { userId: text(a.userId), username: text(a.username), ip: text(a.ip) }
}

const audit = {
  record: async (event: unknown, actor?: unknown) => {
    await callKernel('audit.record', [plain(event), auditActor(actor)])
  },
}

/** The root helper, as the kernel limits it to the actions the plugin declared. */
const helper = {
  available: () => callKernel('helper.available', []),
  call: (
    action: string,
    args?: Record<string, unknown>,
    options?: { onEvent?: (e: unknown) => void; timeoutMs?: number },
  ) =>
    callKernel(
      'helper.call',
      [
        String(action),
        plain(args ?? {}),
        {
          ...(options?.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
          ...(options?.onEvent ? { events: true } : {}),
        },
      ],
      options?.onEvent,
    ),
}

/**
 * Another plugin's service: each method is a call the kernel makes for the plugin, if its provider exposes that
 * method for the access the plugin declared. Arguments and results cross as JSON.
 */
function remoteService(id: string): unknown {
  return new Proxy(create(null) as object, {
    get(_target, name) {
      if (typeof name !== 'string' || name === 'then') return undefined
      return (...args: unknown[]) => callKernel('service.call', [id, name, args.map(plain)])
    },
  })
}

/** `tokens.optional`: another plugin's service it declared in `permissions.services`, reached through the kernel. */
function optionalServices(declared: Record<string, unknown>) {
  return {
    get(token: { id?: unknown }) {
      const id = String(token?.id)
      if (!Object.hasOwn(declared, id)) {
        const err = new Error(`the plugin did not declare the service "${id}" in permissions.services`) as Error & {
          code?: string
          statusCode?: number
        }
        err.name = 'HostdError'
        err.code = 'HOSTD_PLUGIN_PERMISSION_DENIED'
        err.statusCode = 403
        throw err
      }
      return remoteService(id)
    },
  }
}

// ---- the plugin ----

let definition: Definition | null = null
/** The services it provides, by token id, as its `provides` returned them. */
let provided = new Map<string, Record<string, unknown>>()

/** The names of an object's methods, its own and its class's (a service may be a class instance). */
function methodNames(value: object): string[] {
  const names = new Set<string>()
  for (let o: object | null = value; o && o !== ObjectPrototype; o = getPrototypeOf(o))
    for (const name of getOwnPropertyNames(o))
      if (name !== 'constructor' && typeof (value as Record<string, unknown>)[name] === 'function') names.add(name)
  return [...names].slice(0, 200)
}
/** Its own database (./database.ts), when it has entities or asks for `tokens.database`. */
let database: { close(): Promise<void> } | null = null

/** Opens the plugin's own database in its data folder, loading the ORM and the SQLite driver only for such a plugin. */
async function openDatabase(def: Definition): Promise<{ close(): Promise<void> } | null> {
  const wanted = (def.entities?.length ?? 0) > 0 || values(def.deps ?? {}).some((t) => t?.id === 'hostd.database')
  if (!wanted) return null
  const here = import.meta.url
  const module = new URL(here.endsWith('.ts') ? './database.ts' : './database.mjs', here).href
  const { openPluginDatabase, PLUGIN_DATABASE_FILE } = (await import(module)) as typeof import('./database.ts')
  return openPluginDatabase(`${SANDBOX_PATHS.data}/${PLUGIN_DATABASE_FILE}`, (def.entities ?? []) as never[])
}
let deps: Record<string, unknown> = {}
let state: unknown
let routes: DeclaredRoute[] = []
let sockets: DeclaredSocket[] = []

/**
 * A value to resolve a promise with, in a box with no prototype: a plugin that put a `then` on Object.prototype would
 * otherwise make every plain object the runner answers with a thenable that never settles.
 */
function box<T>(value: T): { value: T } {
  const boxed = create(null) as { value: T }
  boxed.value = value
  return boxed
}

async function load(entry: string, sdk: string): Promise<{ value: PluginDescription }> {
  registerHooks({
    resolve(specifier, context, nextResolve) {
      if (specifier === '@hostd/sdk') return { url: sdk, shortCircuit: true }
      if (specifier.startsWith('@hostd/'))
        throw new Error(`${specifier} is not available to an isolated plugin: import only @hostd/sdk`)
      return nextResolve(specifier, context)
    },
  })
  const mod = (await import(pathToFileURL(entry).href)) as { default?: Definition }
  const def = mod.default
  if (!def || (def as unknown as Record<symbol, unknown>)[PLUGIN_BRAND] !== true)
    throw new Error('its entry does not export default definePlugin({...}) from @hostd/sdk')
  definition = def
  const depIds: Record<string, string> = {}
  for (const [name, token] of entries(def.deps ?? {})) depIds[name] = String(token?.id)
  return box({
    id: def.id,
    version: def.version,
    kernel: def.kernel,
    ...(def.description === undefined ? {} : { description: String(def.description) }),
    ...(def.dependsOn ? { dependsOn: plain(def.dependsOn) as Record<string, string> } : {}),
    deps: depIds,
    ...(def.ui === undefined ? {} : { ui: plain(def.ui) }),
    ...(def.permissions === undefined ? {} : { permissions: plain(def.permissions) }),
    warnings: [...(def.warnings ?? [])].map(String),
    provides: typeof def.provides === 'function',
    entities: def.entities?.length ?? 0,
    conditions: (def.conditions ?? []).map((c) => String(c?.name)),
  })
}

async function setup(kernel: unknown): Promise<{ value: PluginManifest }> {
  const def = definition!
  const declared = ((def.permissions as { services?: Record<string, unknown> } | undefined)?.services ?? {}) as Record<
    string,
    unknown
  >
  database = await openDatabase(def)
  const services: Record<string, unknown> = {
    ...(database ? { 'hostd.database': database } : {}),
    'hostd.logger': logger(),
    'hostd.settings': settings,
    'hostd.audit': audit,
    'hostd.helper': helper,
    'hostd.optional': optionalServices(declared),
    ...(kernel ? { 'hostd.kernel': freeze(kernel) } : {}),
  }
  deps = {}
  // Kernel services are the runner's; any other id is another plugin's service, which the kernel checked it declared.
  for (const [name, token] of entries(def.deps ?? {}))
    deps[name] = Object.hasOwn(services, token.id) ? services[token.id] : remoteService(String(token.id))
  state = def.setup ? await def.setup(deps) : undefined
  routes = []
  sockets = []
  const add = (method: string) => (path: string, options: Record<string, unknown>, handler: DeclaredRoute['handler']) =>
    void routes.push({ method, path, options, handler })
  def.routes?.(
    { get: add('GET'), post: add('POST'), put: add('PUT'), patch: add('PATCH'), delete: add('DELETE') },
    deps,
    state,
  )
  def.sockets?.(
    {
      ws: (path: string, options: DeclaredSocket['options'], handler: DeclaredSocket['handler']) =>
        void sockets.push({ path, options, handler }),
    },
    deps,
    state,
  )
  const pick = (options: Record<string, unknown>, names: string[]) => {
    const out: Record<string, unknown> = {}
    for (const name of names) if (options?.[name] !== undefined) out[name] = plain(options[name])
    return out
  }
  return box({
    routes: routes.map((r) => ({
      method: r.method as PluginManifest['routes'][number]['method'],
      path: String(r.path),
      options: pick(r.options, [
        'role',
        'sessionOnly',
        'schema',
        'needs',
        'rawBody',
        'bodyLimit',
        'bodyLimitMessage',
      ]) as PluginManifest['routes'][number]['options'],
    })),
    sockets: sockets.map((s) => ({
      path: String(s.path),
      options: {
        ...pick(s.options, ['role', 'sessionOnly', 'query', 'protocols']),
        admit: typeof s.options?.admit === 'function',
      } as PluginManifest['sockets'][number]['options'],
    })),
  })
}

// ---- requests ----

const inflight = new Map<number, AbortController>()

/** The part of Fastify's reply a handler uses: status, headers, send. */
class Reply {
  statusCode = 200
  sent = false
  payload: unknown = undefined
  readonly headers: Record<string, string> = {}

  code(status: number): this {
    this.statusCode = status
    return this
  }
  status(status: number): this {
    return this.code(status)
  }
  header(name: string, value: unknown): this {
    this.headers[String(name).toLowerCase()] = String(value)
    return this
  }
  getHeader(name: string): string | undefined {
    return this.headers[String(name).toLowerCase()]
  }
  type(contentType: string): this {
    return this.header('content-type', contentType)
  }
  send(payload?: unknown): this {
    this.sent = true
    this.payload = payload
    return this
  }
  get raw(): never {
    throw new Error('reply.raw is not available to an isolated plugin: answer with a value or reply.send()')
  }
  hijack(): never {
    throw new Error('reply.hijack() is not available to an isolated plugin')
  }
}

/** Sends the answer to request `id`. A JSON body is serialized once, into the message's text. */
function respond(id: number, reply: Reply, value: unknown): void {
  const headers: Record<string, string> = {}
  for (const [name, v] of entries(reply.headers))
    if ((ALLOWED_RESPONSE_HEADERS as readonly string[]).includes(name) && !/[\r\n]/.test(v)) headers[name] = v
  const out = reply.sent ? reply.payload : value
  const status = !reply.sent && value === undefined ? 204 : reply.statusCode
  const base = { t: 'response' as const, id, status, headers }
  if (out === undefined || status === 204) send({ ...base, status: status === 200 ? 204 : status })
  else if (typeof out === 'string') send({ ...base, text: out })
  else if (out instanceof Uint8Array) send({ ...base, bytes: Buffer.from(out).toString('base64') })
  else if (isStream(out)) {
    send({ ...base, stream: true })
    void pump(id, out)
  } else write(encodeText(`${stringify(base).slice(0, -1)},"body":${stringify(out) ?? 'null'}}`))
}

/** A Node stream or any async iterable (of strings or bytes): what a handler may answer with to stream its body. */
function isStream(value: unknown): value is AsyncIterable<unknown> & { destroy?: () => void } {
  return typeof (value as { [Symbol.asyncIterator]?: unknown })?.[Symbol.asyncIterator] === 'function'
}

/** Sends a streamed answer's body as `chunk` messages, then `end`; stops when the kernel cancels the request. */
async function pump(id: number, body: AsyncIterable<unknown> & { destroy?: () => void }): Promise<void> {
  const controller = new AbortController()
  streaming.set(id, controller)
  controller.signal.addEventListener('abort', () => body.destroy?.())
  try {
    for await (const piece of body) {
      if (controller.signal.aborted) break
      if (typeof piece === 'string') send({ t: 'chunk', id, text: piece })
      else if (piece instanceof Uint8Array) send({ t: 'chunk', id, bytes: Buffer.from(piece).toString('base64') })
      else throw new Error('a streamed answer yields strings or bytes')
    }
    send({ t: 'end', id })
  } catch (err) {
    if (!controller.signal.aborted) send({ t: 'end', id, error: errorInfo(err) })
  } finally {
    streaming.delete(id)
  }
}
/** Streamed answers being sent, by request id: a `cancel` stops one. */
const streaming = new Map<number, AbortController>()

async function request(msg: RequestMessage): Promise<void> {
  const route = routes[msg.route]
  const controller = new AbortController()
  inflight.set(msg.id, controller)
  const reply = new Reply()
  try {
    if (!route) throw new Error(`no route ${msg.route}`)
    const req = {
      id: msg.reqId,
      method: msg.method,
      url: msg.url,
      params: msg.params,
      query: msg.query,
      body: msg.body,
      headers: msg.headers,
      user: msg.user,
      apiToken: msg.apiToken,
      ip: msg.ip,
      lifetime: controller.signal,
      get log() {
        return logger({ reqId: msg.reqId })
      },
      [REQUEST_ID]: msg.reqId,
    }
    let value = route.handler(req, reply)
    if (value instanceof SavedPromise) value = await value
    respond(msg.id, reply, value)
  } catch (err) {
    send({ t: 'response', id: msg.id, status: 500, headers: {}, error: errorInfo(err) })
  } finally {
    inflight.delete(msg.id)
  }
}

// ---- sockets ----

const OPEN = 1
const CLOSED = 3

/** The part of a `ws` WebSocket a socket handler uses: messages, send, close, its state. */
class IsolatedSocket extends EventEmitter {
  readonly CONNECTING = 0
  readonly OPEN = OPEN
  readonly CLOSING = 2
  readonly CLOSED = CLOSED
  readyState = OPEN
  readonly bufferedAmount = 0
  readonly protocol: string
  readonly #sid: number
  #held: [Buffer, boolean][] = []

  constructor(sid: number, protocol: string) {
    super()
    this.#sid = sid
    this.protocol = protocol
    // Messages that arrive before the handler listens are held and handed over once it does (as the kernel does).
    this.on('newListener', (event: string) => {
      if (event !== 'message' || this.#held.length === 0) return
      queueMicrotask(() => {
        const held = this.#held
        this.#held = []
        for (const [data, binary] of held) this.emit('message', data, binary)
      })
    })
  }

  receive(data: Buffer, binary: boolean): void {
    if (this.listenerCount('message') === 0) this.#held.push([data, binary])
    else this.emit('message', data, binary)
  }

  send(data: unknown, options?: unknown, cb?: (err?: Error) => void): void {
    const done = typeof options === 'function' ? (options as (err?: Error) => void) : cb
    if (this.readyState !== OPEN) {
      done?.(new Error('the socket is not open'))
      return
    }
    if (typeof data === 'string') send({ t: 'socket.send', sid: this.#sid, text: data })
    else if (data instanceof Uint8Array || data instanceof ArrayBuffer)
      send({ t: 'socket.send', sid: this.#sid, bytes: Buffer.from(data as Uint8Array).toString('base64') })
    else send({ t: 'socket.send', sid: this.#sid, text: String(data) })
    done?.()
  }

  close(code?: number, reason?: string): void {
    if (this.readyState !== OPEN) return
    this.readyState = 2
    send({
      t: 'socket.close',
      sid: this.#sid,
      ...(typeof code === 'number' && code >= 1000 && code <= 4999 ? { code } : {}),
      ...(reason ? { reason: String(reason).slice(0, 123) } : {}),
    })
  }

  terminate(): void {
    this.close(1006)
  }

  ping(): void {}

  closed(code: number, reason: string): void {
    if (this.readyState === CLOSED) return
    this.readyState = CLOSED
    this.emit('close', code, Buffer.from(reason))
  }
}

const openSockets = new Map<number, { socket: IsolatedSocket; abort: AbortController }>()

function socketRequest(m: { user: unknown; apiToken: unknown; ip: string; query: unknown }, reqId: string) {
  return { user: m.user, apiToken: m.apiToken, ip: m.ip, query: m.query, id: reqId, [REQUEST_ID]: reqId }
}

function openSocket(m: Extract<KernelMessage, { t: 'socket.open' }>): void {
  const def = sockets[m.socket]
  const socket = new IsolatedSocket(m.sid, m.protocol)
  const abort = new AbortController()
  openSockets.set(m.sid, { socket, abort })
  if (!def) {
    socket.close(1011, 'no such socket')
    return
  }
  SavedPromise.resolve()
    .then(() =>
      def.handler(socket, {
        user: m.user,
        query: m.query,
        request: socketRequest(m, `socket-${m.sid}`),
        signal: abort.signal,
      }),
    )
    .catch((err: unknown) => {
      logger().error({ err }, 'socket handler failed')
      socket.close(1011, 'internal error')
    })
}

function socketClosed(sid: number, code: number, reason: string): void {
  const open = openSockets.get(sid)
  if (!open) return
  openSockets.delete(sid)
  open.abort.abort()
  open.socket.closed(code, reason)
}

// ---- the kernel's calls ----

async function run(method: string, args: unknown[]): Promise<{ value: unknown }> {
  const def = definition
  switch (method) {
    case 'load': {
      const { entry, sdk } = args[0] as { entry: string; sdk: string }
      return load(entry, sdk)
    }
    case 'setup':
      return setup((args[0] as { kernel: unknown }).kernel)
    case 'start':
      await def?.start?.(deps, state)
      return box(null)
    case 'stop':
      for (const controller of inflight.values()) controller.abort()
      for (const [sid] of openSockets) socketClosed(sid, 1012, 'plugin stopping')
      await def?.stop?.(deps, state)
      await database?.close()
      database = null
      return box(null)
    case 'condition': {
      const result = await def?.conditions?.[args[0] as number]?.check()
      return box(result === true ? true : String(result ?? 'condition not met').slice(0, 1000))
    }
    case 'provides': {
      provided = new Map()
      const bindings = ((await def?.provides?.(deps, state)) ?? []) as {
        token?: { id?: unknown }
        value?: unknown
        expose?: { read?: unknown[]; write?: unknown[] }
      }[]
      const out = []
      for (const binding of bindings) {
        const id = String(binding?.token?.id)
        const value = binding?.value as Record<string, unknown> | null
        if (!value || typeof value !== 'object') throw new Error(`provides "${id}": its value is not an object`)
        provided.set(id, value)
        const methods = methodNames(value)
        const names = (list: unknown[] | undefined) => (list ?? []).map(String)
        out.push({
          id,
          methods,
          ...(binding.expose
            ? { expose: { read: names(binding.expose.read), write: names(binding.expose.write) } }
            : {}),
        })
      }
      return box(out)
    }
    case 'serve': {
      const [id, method, callArgs] = args as [string, string, unknown[]]
      const service = provided.get(id)
      const fn = service?.[method]
      if (typeof fn !== 'function') throw new Error(`it provides no method ${method} of "${id}"`)
      return box(plain(await (fn as (...a: unknown[]) => unknown).apply(service, callArgs)) ?? null)
    }
    case 'admit': {
      const [index, m] = args as [number, { user: unknown; apiToken: unknown; ip: string; query: unknown }]
      await sockets[index]?.options.admit?.({ user: m.user, query: m.query, request: socketRequest(m, 'admit') })
      return box(null)
    }
    default:
      throw new Error(`unknown call ${method}`)
  }
}

function receive(message: KernelMessage): void {
  switch (message.t) {
    case 'ping':
      send({ t: 'pong', n: message.n })
      return
    case 'request':
      void request(message)
      return
    case 'cancel':
      inflight.get(message.id)?.abort()
      streaming.get(message.id)?.abort()
      return
    case 'call': {
      const { id, method, args } = message
      // The answer travels in a box with no prototype: a plugin that put a `then` on Object.prototype would
      // otherwise make every plain answer a thenable that never settles.
      run(method, args).then(
        (boxed) => send({ t: 'result', id, ok: true, value: boxed.value ?? null }),
        (err: unknown) => send({ t: 'result', id, ok: false, error: errorInfo(err) }),
      )
      return
    }
    case 'result': {
      const pending = calls.get(message.id)
      if (!pending) return
      calls.delete(message.id)
      if (message.ok) pending.resolve(message.value)
      else pending.reject(kernelError(message.error))
      return
    }
    case 'event':
      calls.get(message.id)?.onEvent?.(message.event)
      return
    case 'socket.open':
      openSocket(message)
      return
    case 'socket.message': {
      const data = message.bytes !== undefined ? Buffer.from(message.bytes, 'base64') : Buffer.from(message.text ?? '')
      openSockets.get(message.sid)?.socket.receive(data, message.bytes !== undefined)
      return
    }
    case 'socket.closed':
      socketClosed(message.sid, message.code, message.reason)
      return
  }
}

channel.on('data', (chunk: Buffer) => {
  for (const text of reader.push(chunk)) {
    const message = parse(text) as KernelMessage
    if (!isArray(message) && typeof message === 'object' && message !== null) receive(message)
  }
})
// The kernel closed the channel (or died): nothing more will come, so end.
channel.on('close', () => realExit(0))
channel.on('error', () => realExit(0))
