/**
 * The one channel between the kernel and an isolated plugin's process: the kernel's side is kernel/src/isolation, the
 * plugin's side is ./runner.ts, which runs inside the sandbox. Both import this module and nothing else of each other.
 *
 * Framing: each message is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON, on a socket the
 * process inherits as file descriptor 3 (a socketpair made by the kernel). Every message is an object whose `t`
 * names its kind; each kind has a schema below. The kernel checks every message the plugin's process sends against
 * its schema (and its size against MAX_CHILD_FRAME) and stops a process that sends anything else.
 *
 * This module imports nothing at run time: the sandbox sees only the Node runtime, the sdk and the plugin, and the
 * runner must start fast. The schemas are made by `protocolSchemas(Type)` with the caller's TypeBox builder (the
 * kernel's); the types below are derived from them.
 */
import type { JavaScriptTypeBuilder, Static } from '@sinclair/typebox'

/** The descriptor the channel arrives on inside the sandbox. */
export const CHANNEL_FD = 3
/** The largest message a plugin's process may send (a response body and its JSON overhead). */
export const MAX_CHILD_FRAME = 16 * 1024 * 1024
/** The largest message the kernel sends (a request body, JSON-encoded). */
export const MAX_KERNEL_FRAME = 64 * 1024 * 1024

/** Where things are inside the sandbox. */
export const SANDBOX_PATHS = {
  /** The Node binary (the daemon's own, bound read-only). */
  node: '/hostd/node',
  /** The sdk folder (read-only): its build in dist/, its sources in src/. */
  sdk: '/hostd/sdk',
  /** npm packages the sdk needs when it runs from its sources (read-only). */
  modules: '/hostd/node_modules',
  /** The plugin's own folder (read-only). */
  plugin: '/plugin',
  /** The plugin's data folder, the only writable place besides /tmp: `tokens.kernel.dataDir` inside. */
  data: '/data',
} as const

/** The most arguments one call of another plugin's service may carry. */
export const MAX_SERVICE_ARGS = 16

/** Request headers handed to an isolated plugin; cookies, Authorization and everything else stay in the kernel. */
export const FORWARDED_REQUEST_HEADERS = ['accept', 'content-type', 'user-agent'] as const
/** Response headers an isolated plugin may set; the kernel sets the rest (security headers, cookies never). */
export const ALLOWED_RESPONSE_HEADERS = [
  'content-type',
  'cache-control',
  'content-disposition',
  'content-language',
  'etag',
  'last-modified',
  'retry-after',
] as const

/**
 * `file:line:column` of the first frame of `stack` inside the plugin's folder, relative to it (`src/index.ts:12:5`):
 * where a plugin's error came from, as the kernel reports it.
 */
export function originOf(stack: string | undefined): string | undefined {
  if (!stack) return undefined
  const root = `${SANDBOX_PATHS.plugin}/`
  for (const line of stack.split('\n').slice(1)) {
    const match = /(?:file:\/\/)?(\/[^\s():?]+)(?:\?[^\s():]*)?:(\d+):(\d+)/.exec(line)
    if (match?.[1]?.startsWith(root)) return `${match[1].slice(root.length)}:${match[2]}:${match[3]}`
  }
  return undefined
}

/** Encodes one message as a frame. `stringify` is passed in so the runner can use the JSON it saved at start. */
export function encodeFrame(message: unknown, stringify: (value: unknown) => string = JSON.stringify): Buffer {
  return encodeText(stringify(message))
}

/** A message already written as JSON text, as a frame (one copy). */
export function encodeText(text: string): Buffer {
  const length = Buffer.byteLength(text, 'utf8')
  const frame = Buffer.allocUnsafe(4 + length)
  frame.writeUInt32BE(length, 0)
  frame.write(text, 4, 'utf8')
  return frame
}

/**
 * Splits a byte stream into frames. `push` returns the complete message texts received so far; a frame announced
 * larger than `max` throws (the sender is broken or hostile: the reader drops the connection).
 */
export class FrameReader {
  readonly #max: number
  #chunks: Buffer[] = []
  #buffered = 0

  constructor(max: number) {
    this.#max = max
  }

  push(chunk: Buffer): string[] {
    this.#chunks.push(chunk)
    this.#buffered += chunk.length
    const out: string[] = []
    for (;;) {
      if (this.#buffered < 4) return out
      if (this.#chunks.length > 1) this.#chunks = [Buffer.concat(this.#chunks, this.#buffered)]
      const head = this.#chunks[0]!
      const length = head.readUInt32BE(0)
      if (length > this.#max) throw new RangeError(`a message of ${length} bytes is over the limit of ${this.#max}`)
      if (this.#buffered < 4 + length) return out
      out.push(head.toString('utf8', 4, 4 + length))
      const rest = head.subarray(4 + length)
      this.#chunks = rest.length > 0 ? [rest] : []
      this.#buffered = rest.length
    }
  }
}

/** The message schemas, made with the given TypeBox builder (see the module comment). */
export function protocolSchemas(Type: JavaScriptTypeBuilder) {
  const Text = (maxLength: number) => Type.String({ maxLength })
  const Id = Type.Integer({ minimum: 0 })
  const closed = { additionalProperties: false }
  const Role = Type.Union([Type.Literal('viewer'), Type.Literal('operator'), Type.Literal('admin')])
  const Method = Type.Union([
    Type.Literal('GET'),
    Type.Literal('POST'),
    Type.Literal('PUT'),
    Type.Literal('PATCH'),
    Type.Literal('DELETE'),
  ])
  /** An error as it crosses: `origin` is where it was thrown, `file:line:column` relative to the plugin's folder. */
  const ErrorInfo = Type.Object(
    {
      message: Text(4096),
      code: Type.Optional(Text(100)),
      status: Type.Optional(Type.Integer({ minimum: 100, maximum: 599 })),
      origin: Type.Optional(Text(1024)),
    },
    closed,
  )
  const User = Type.Object({ id: Text(200), username: Text(200), role: Role }, closed)
  const ApiToken = Type.Object({ id: Text(200), name: Text(200) }, closed)
  const Headers = Type.Record(Type.String(), Text(8192))
  /** A JSON schema (a route's params, query, body or response), checked further by the kernel as it mounts it. */
  const Schema = Type.Record(Type.String(), Type.Unknown())
  const Binary = {
    text: Type.Optional(Type.String()),
    bytes: Type.Optional(Type.String({ contentEncoding: 'base64' })),
  }

  const Description = Type.Object(
    {
      id: Text(40),
      version: Text(100),
      kernel: Text(100),
      description: Type.Optional(Text(1000)),
      dependsOn: Type.Optional(Type.Record(Type.String(), Text(100))),
      /** `deps` as name -> service token id. */
      deps: Type.Record(Type.String(), Text(200)),
      ui: Type.Optional(Type.Unknown()),
      /** Checked again by the kernel's definePlugin. */
      permissions: Type.Optional(Type.Unknown()),
      warnings: Type.Array(Text(1000), { maxItems: 50 }),
      provides: Type.Boolean(),
      entities: Type.Integer({ minimum: 0 }),
      conditions: Type.Array(Text(200), { maxItems: 50 }),
    },
    closed,
  )
  const RouteManifest = Type.Object(
    {
      method: Method,
      path: Text(1000),
      options: Type.Object(
        {
          /** Checked by the kernel, which refuses a route without a valid one with the same words as in process. */
          role: Type.Optional(Type.Unknown()),
          sessionOnly: Type.Optional(Type.Boolean()),
          schema: Type.Optional(Schema),
          needs: Type.Optional(Type.Array(Text(40), { maxItems: 10 })),
          rawBody: Type.Optional(Type.Boolean()),
          bodyLimit: Type.Optional(Type.Integer({ minimum: 0 })),
          bodyLimitMessage: Type.Optional(Text(1000)),
        },
        closed,
      ),
    },
    closed,
  )
  const SocketManifest = Type.Object(
    {
      path: Text(1000),
      options: Type.Object(
        {
          role: Type.Optional(Type.Unknown()),
          sessionOnly: Type.Optional(Type.Boolean()),
          query: Type.Optional(Schema),
          protocols: Type.Optional(Type.Array(Text(200), { maxItems: 20 })),
          admit: Type.Boolean(),
        },
        closed,
      ),
    },
    closed,
  )
  const Manifest = Type.Object(
    {
      routes: Type.Array(RouteManifest, { maxItems: 500 }),
      sockets: Type.Array(SocketManifest, { maxItems: 100 }),
    },
    closed,
  )
  const AuditEvent = Type.Object(
    {
      action: Type.String({ maxLength: 100, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' }),
      target: Type.Optional(Type.Union([Text(500), Type.Null()])),
      result: Type.Optional(Type.Union([Type.Literal('success'), Type.Literal('failure')])),
      detail: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    },
    closed,
  )
  /** Who an audit record names: a request in flight (by its id: the kernel fills in who), or what the plugin says. */
  const AuditActor = Type.Union([
    Type.Null(),
    Type.Object({ request: Text(100) }, closed),
    Type.Object(
      {
        userId: Type.Optional(Type.Union([Text(200), Type.Null()])),
        username: Type.Optional(Type.Union([Text(200), Type.Null()])),
        ip: Type.Optional(Type.Union([Text(100), Type.Null()])),
      },
      closed,
    ),
  ])
  const SettingKey = Type.String({ minLength: 1, maxLength: 200 })
  const ServiceId = Type.String({ minLength: 1, maxLength: 200 })
  const HelperAction = Type.String({ minLength: 1, maxLength: 200 })

  /** What the plugin's process sends. */
  const child = {
    /** The answer to a kernel `call`. */
    result: Type.Object(
      {
        t: Type.Literal('result'),
        id: Id,
        ok: Type.Boolean(),
        value: Type.Optional(Type.Unknown()),
        error: Type.Optional(ErrorInfo),
      },
      closed,
    ),
    /**
     * The answer to a `request`: a JSON `body`, a `text` or base64 `bytes`, nothing (204), or an `error`; with
     * `stream`, its body follows as `chunk` messages until an `end`.
     */
    response: Type.Object(
      {
        t: Type.Literal('response'),
        id: Id,
        status: Type.Integer({ minimum: 200, maximum: 599 }),
        headers: Headers,
        body: Type.Optional(Type.Unknown()),
        ...Binary,
        error: Type.Optional(ErrorInfo),
        stream: Type.Optional(Type.Literal(true)),
      },
      closed,
    ),
    /** A piece of a streamed answer's body. */
    chunk: Type.Object({ t: Type.Literal('chunk'), id: Id, ...Binary }, closed),
    /** A streamed answer's end; with `error`, it broke off (the client's connection is cut). */
    end: Type.Object({ t: Type.Literal('end'), id: Id, error: Type.Optional(ErrorInfo) }, closed),
    pong: Type.Object({ t: Type.Literal('pong'), n: Id }, closed),
    log: Type.Object(
      {
        t: Type.Literal('log'),
        level: Type.Union([Type.Literal('debug'), Type.Literal('info'), Type.Literal('warn'), Type.Literal('error')]),
        msg: Text(8192),
        data: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      },
      closed,
    ),
    /** A call into the kernel's services; answered with a kernel `result`. */
    call: Type.Union([
      Type.Object(
        { t: Type.Literal('call'), id: Id, method: Type.Literal('settings.get'), args: Type.Tuple([SettingKey]) },
        closed,
      ),
      Type.Object(
        {
          t: Type.Literal('call'),
          id: Id,
          method: Type.Literal('settings.set'),
          args: Type.Tuple([SettingKey, Type.Unknown()]),
        },
        closed,
      ),
      Type.Object(
        { t: Type.Literal('call'), id: Id, method: Type.Literal('settings.delete'), args: Type.Tuple([SettingKey]) },
        closed,
      ),
      Type.Object(
        {
          t: Type.Literal('call'),
          id: Id,
          method: Type.Literal('audit.record'),
          args: Type.Tuple([AuditEvent, AuditActor]),
        },
        closed,
      ),
      /** A method of another plugin's service: its token id, the method's name, its arguments (JSON). */
      Type.Object(
        {
          t: Type.Literal('call'),
          id: Id,
          method: Type.Literal('service.call'),
          args: Type.Tuple([ServiceId, Text(200), Type.Array(Type.Unknown(), { maxItems: MAX_SERVICE_ARGS })]),
        },
        closed,
      ),
      Type.Object(
        { t: Type.Literal('call'), id: Id, method: Type.Literal('helper.available'), args: Type.Tuple([]) },
        closed,
      ),
      /** A root helper action; with `events`, its streamed events come back as kernel `event` messages first. */
      Type.Object(
        {
          t: Type.Literal('call'),
          id: Id,
          method: Type.Literal('helper.call'),
          args: Type.Tuple([
            HelperAction,
            Type.Record(Type.String(), Type.Unknown()),
            Type.Object(
              {
                timeoutMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 3_600_000 })),
                events: Type.Optional(Type.Boolean()),
              },
              closed,
            ),
          ]),
        },
        closed,
      ),
    ]),
    /** An uncaught error, sent just before the process ends, so the kernel can say where it came from. */
    fatal: Type.Object({ t: Type.Literal('fatal'), error: ErrorInfo }, closed),
    'socket.send': Type.Object({ t: Type.Literal('socket.send'), sid: Id, ...Binary }, closed),
    'socket.close': Type.Object(
      {
        t: Type.Literal('socket.close'),
        sid: Id,
        code: Type.Optional(Type.Integer({ minimum: 1000, maximum: 4999 })),
        reason: Type.Optional(Text(123)),
      },
      closed,
    ),
  }

  /** What the kernel sends. */
  const kernel = {
    /**
     * `load` imports the entry; `setup` runs setup, routes and sockets; `condition` and `admit` run one check;
     * `provides` runs its hook, and `serve` calls a method of a service it provides for another plugin.
     */
    call: Type.Object(
      {
        t: Type.Literal('call'),
        id: Id,
        method: Type.Union([
          Type.Literal('load'),
          Type.Literal('setup'),
          Type.Literal('start'),
          Type.Literal('stop'),
          Type.Literal('condition'),
          Type.Literal('admit'),
          Type.Literal('provides'),
          Type.Literal('serve'),
        ]),
        args: Type.Array(Type.Unknown()),
      },
      closed,
    ),
    /** The answer to a plugin's `call`. */
    result: Type.Object(
      {
        t: Type.Literal('result'),
        id: Id,
        ok: Type.Boolean(),
        value: Type.Optional(Type.Unknown()),
        error: Type.Optional(ErrorInfo),
      },
      closed,
    ),
    /** One request to route number `route` of the manifest, already signed in, authorized and validated. */
    request: Type.Object(
      {
        t: Type.Literal('request'),
        id: Id,
        route: Id,
        method: Method,
        url: Type.String(),
        params: Type.Unknown(),
        query: Type.Unknown(),
        body: Type.Optional(Type.Unknown()),
        headers: Headers,
        user: Type.Union([User, Type.Null()]),
        apiToken: Type.Union([ApiToken, Type.Null()]),
        ip: Type.String(),
        reqId: Type.String(),
      },
      closed,
    ),
    /** One event of a streamed call the plugin made (a helper action's progress), before its `result`. */
    event: Type.Object({ t: Type.Literal('event'), id: Id, event: Type.Unknown() }, closed),
    /** The request ended on the kernel's side (the client went away, its deadline passed): its `lifetime` aborts. */
    cancel: Type.Object({ t: Type.Literal('cancel'), id: Id }, closed),
    ping: Type.Object({ t: Type.Literal('ping'), n: Id }, closed),
    'socket.open': Type.Object(
      {
        t: Type.Literal('socket.open'),
        sid: Id,
        socket: Id,
        query: Type.Unknown(),
        user: User,
        apiToken: Type.Union([ApiToken, Type.Null()]),
        ip: Type.String(),
        protocol: Type.String(),
      },
      closed,
    ),
    'socket.message': Type.Object({ t: Type.Literal('socket.message'), sid: Id, ...Binary }, closed),
    'socket.closed': Type.Object(
      { t: Type.Literal('socket.closed'), sid: Id, code: Type.Integer(), reason: Type.String() },
      closed,
    ),
  }

  /** A service it provides: its token id, its methods' names, and what third-party plugins may call (`expose`). */
  const Provided = Type.Object(
    {
      id: Text(200),
      methods: Type.Array(Text(200), { maxItems: 200 }),
      expose: Type.Optional(
        Type.Object(
          {
            read: Type.Optional(Type.Array(Text(200), { maxItems: 200 })),
            write: Type.Optional(Type.Array(Text(200), { maxItems: 200 })),
          },
          closed,
        ),
      ),
    },
    closed,
  )

  /** The value of a successful `result` for each kernel call. */
  const results = {
    load: Description,
    setup: Manifest,
    start: Type.Null(),
    stop: Type.Null(),
    condition: Type.Union([Type.Literal(true), Text(1000)]),
    admit: Type.Null(),
    /** `provides` runs its hook: the services it offers, each called through `serve` (token id, method, JSON args). */
    provides: Type.Array(Provided, { maxItems: 50 }),
    serve: Type.Unknown(),
  }

  return { child, kernel, results, User, ApiToken, ErrorInfo }
}

type Schemas = ReturnType<typeof protocolSchemas>

/** A message the plugin's process sends. */
export type ChildMessage = { [K in keyof Schemas['child']]: Static<Schemas['child'][K]> }[keyof Schemas['child']]
/** A message the kernel sends. */
export type KernelMessage = { [K in keyof Schemas['kernel']]: Static<Schemas['kernel'][K]> }[keyof Schemas['kernel']]
export type KernelCall = Static<Schemas['kernel']['call']>
export type ChildCall = Static<Schemas['child']['call']>
export type RequestMessage = Static<Schemas['kernel']['request']>
export type ResponseMessage = Static<Schemas['child']['response']>
export type ErrorInfo = Static<Schemas['ErrorInfo']>
export type PluginDescription = Static<Schemas['results']['load']>
export type PluginManifest = Static<Schemas['results']['setup']>
export type ProvidedService = Static<Schemas['results']['provides']>[number]
export type RouteManifest = PluginManifest['routes'][number]
export type SocketManifest = PluginManifest['sockets'][number]
export type KernelCallMethod = KernelCall['method']
