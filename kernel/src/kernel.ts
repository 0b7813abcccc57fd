import 'reflect-metadata'
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { mkdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { container as rootContainer } from 'tsyringe'
import pino, { type Logger } from 'pino'
import {
  KERNEL_API_VERSION,
  tokens,
  type HelperClient,
  type HostdPlugin,
  type KernelInfo,
  type OptionalServices,
  type RouteDefinition,
  type ServiceBinding,
  type ServiceToken,
} from '@hostd/sdk'
import type { KernelConfig } from './config.ts'
import { openDatabase, type KernelDatabase } from './db/database.ts'
import { scopedSettings } from './db/settings.ts'
import { SessionStore } from './auth/sessions.ts'
import { primeDecoy } from './auth/passwords.ts'
import { LoginThrottle } from './auth/throttle.ts'
import { TwoFactorPolicy } from './auth/policy.ts'
import { TwoFactorService } from './auth/two-factor.ts'
import { LoginChallenges } from './auth/challenges.ts'
import { SecretBox } from './auth/secret-box.ts'
import { accountRoutes } from './auth/account-routes.ts'
import { UserService } from './users/service.ts'
import { KernelAudit } from './audit/service.ts'
import { KernelEventHub } from './events.ts'
import { UnixHelperClient } from './helper-client.ts'
import { createInstance, mountRoute } from './http/instance.ts'
import { SecureResponse, setSecurityHeaders } from './http/security-headers.ts'
import { createRemoteDispatch, DISPATCH_SERVICE_ID } from './http/remote-dispatch.ts'
import { collectRoutes } from './http/registrar.ts'
import { authRoutes } from './auth/routes.ts'
import { userRoutes } from './users/routes.ts'
import { auditRoutes } from './audit/routes.ts'
import { systemRoutes } from './system/routes.ts'
import { extensionRoutes } from './plugins/routes.ts'
import { PluginRegistry } from './plugins/registry.ts'
import { socketHub } from './plugins/socket-hub.ts'
import { watchPlugins, type PluginWatcher } from './plugins/watcher.ts'
import { recoverInstalls } from './plugins/install.ts'
import { PluginIsolation } from './isolation/index.ts'
import { DEFAULT_ISOLATION } from './isolation/settings.ts'
import { readCommit, readVersion } from './system/version.ts'
import { ensureTls } from './tls.ts'
import { UiServer } from './ui/server.ts'
import { SetupState, setupRestoreRoutes, type RestoredHandler } from './setup-restore.ts'
import type { KernelServices } from './services.ts'

// Not `import`: node:http's ES module facade loads Node's bundled undici (docs/ARCHITECTURE.md, "Runtime").
const { createServer: createHttpServer } = process.getBuiltinModule('node:http')

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))

export interface KernelOptions {
  /** Plugin definitions handed over in-process (the sdk test harness). */
  plugins?: HostdPlugin[]
  /** Serve plain HTTP instead of TLS (in-process tests only; the daemon always uses TLS). */
  insecureHttp?: boolean
  /** Watch the plugins dir for hot loading (default true). */
  watch?: boolean
  /**
   * Load the plugins before `createKernel` returns (default true). The daemon says false: it listens first, then calls
   * `startPlugins`, so /health answers while plugins start.
   */
  startPlugins?: boolean
  logger?: Logger
  /**
   * Services that replace the kernel's or a plugin's for every plugin (the test harness's `services`): each plugin's
   * `deps` and `optional.get` answer these values. A replaced `tokens.helper` is also the one the kernel's 423 gate asks.
   */
  serviceOverrides?: ServiceBinding[]
  /**
   * What to do once first-run setup restored hostd from a backup into a folder (the daemon: close this kernel, swap
   * the folder in, start a new kernel). Without it, setup offers no restore.
   */
  onRestored?: RestoredHandler
}

export interface Kernel {
  readonly config: KernelConfig
  readonly registry: PluginRegistry
  readonly services: KernelServices
  readonly db: KernelDatabase
  /** The request handler: the routing table picks the kernel's or a plugin's instance. */
  readonly handler: (req: IncomingMessage, res: ServerResponse) => void
  readonly server: Server | HttpsServer
  listen(): Promise<string>
  /** Loads the plugins (given, built-in, then the plugins dir) and starts watching; once, whoever asks. */
  startPlugins(): Promise<void>
  close(): Promise<void>
}

/** Builds the whole daemon: database, services, the kernel's routes, the socket hub and the plugin registry. */
export async function createKernel(config: KernelConfig, options: KernelOptions = {}): Promise<Kernel> {
  const log =
    options.logger ??
    pino({
      level: config.logLevel,
      redact: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]', '*.password', '*.token'],
    })
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 })
  const db = await openDatabase(config.dataDir)
  void primeDecoy()
  const policy = new TwoFactorPolicy(scopedSettings(db, 'kernel'))
  await policy.load()
  const lifetimes = {
    idleSeconds: config.sessionIdleSeconds,
    maxSeconds: config.sessionMaxSeconds,
    reauthSeconds: config.reauthSeconds,
  }
  const sessions = new SessionStore(db.native, db.writes, lifetimes, policy, (err) =>
    log.error({ err }, 'closing a live connection failed'),
  )
  const secretBox = await SecretBox.load(config.dataDir)
  // Plugin state changes and audit records, for built-in plugins (`tokens.events`; never granted to third-party ones).
  const events = new KernelEventHub(log)
  const audit = new KernelAudit(db, log, scopedSettings(db, 'kernel'), config.loginWindowSeconds, events)
  await audit.start()
  const overrides = new Map<string, unknown>((options.serviceOverrides ?? []).map((b) => [b.token.id, b.value]))
  const overrideExposures = new Map(
    (options.serviceOverrides ?? []).flatMap((b) => (b.expose ? [[b.token.id, b.expose] as const] : [])),
  )
  const helper =
    (overrides.get(tokens.helper.id) as HelperClient | undefined) ?? new UnixHelperClient(config.helperSocket)
  const version = readVersion(REPO_ROOT)
  const kernelInfo: KernelInfo = {
    version,
    apiVersion: KERNEL_API_VERSION,
    dataDir: config.dataDir,
    dockerHost: config.dockerHost,
  }

  const container = rootContainer.createChildContainer()
  container.register(tokens.logger.id, { useValue: log })
  container.register(tokens.audit.id, { useValue: audit })
  container.register(tokens.database.id, { useValue: { orm: db.orm, em: db.em } })
  container.register(tokens.settings.id, { useValue: scopedSettings(db, 'kernel') })
  container.register(tokens.helper.id, { useValue: helper })
  container.register(tokens.kernel.id, { useValue: kernelInfo })
  container.register(tokens.events.id, { useValue: events })
  // Optional dependencies: looked up per call; a service withdrawn by an unloaded plugin throws, so it reads as absent.
  const optional: OptionalServices = {
    get: <T>(token: ServiceToken<T>) => {
      if (overrides.has(token.id)) return overrides.get(token.id) as T
      if (!container.isRegistered(token.id, true)) return undefined
      try {
        return container.resolve<T>(token.id)
      } catch {
        return undefined
      }
    },
  }
  container.register(tokens.optional.id, { useValue: optional })

  let registry: PluginRegistry | undefined
  const services: KernelServices = {
    config,
    version,
    commit: readCommit(REPO_ROOT),
    apiVersion: KERNEL_API_VERSION,
    users: new UserService(db, sessions),
    sessions,
    throttle: new LoginThrottle({
      perUser: config.loginMaxFailuresPerUser,
      perAddress: config.loginMaxFailuresPerAddress,
      windowSeconds: config.loginWindowSeconds,
    }),
    twoFactor: new TwoFactorService(db, secretBox, sessions),
    policy,
    challenges: new LoginChallenges(),
    audit,
    setup: Object.assign(new SetupState(), { onRestored: options.onRestored ?? null }),
    registry: () => registry!,
  }
  const kernelRoutes: RouteDefinition[] = collectRoutes((r) => {
    systemRoutes(r, services)
    authRoutes(r, services)
    setupRestoreRoutes(r, services, optional)
    accountRoutes(r, services)
    userRoutes(r, services)
    auditRoutes(r, services)
    extensionRoutes(r, services)
  })
  const instanceDeps = { logger: log, sessions, helper }
  registry = new PluginRegistry({
    log,
    container,
    instance: instanceDeps,
    db,
    audit,
    events,
    kernelRoutes,
    dataDir: config.dataDir,
    secrets: secretBox,
    overrides,
    overrideExposures,
    callTimeoutMs: config.pluginCallTimeoutMs,
    dev: config.dev,
    // Third-party plugins run in sandboxed processes of their own (docs/ARCHITECTURE.md, "the trust boundary").
    isolation: new PluginIsolation({ settings: config.isolation ?? DEFAULT_ISOLATION, dataDir: config.dataDir, log }),
  })

  // The kernel's own routes get their own instance, dispatched like a plugin's: they do not pay for the
  // WebSocket hooks of the root instance, which keeps only the socket hub and the 404 answer.
  const kernelApp = createInstance(instanceDeps)
  kernelApp.addContentTypeParser(
    ['application/gzip', 'application/x-gzip', 'application/octet-stream'],
    { parseAs: 'buffer' },
    (_req, body, done) => done(null, body),
  )
  for (const route of kernelRoutes) mountRoute(kernelApp, instanceDeps, route, 'kernel')
  await kernelApp.ready()

  const ui = await UiServer.create({ dist: config.uiDir, registry, log })
  const tls = options.insecureHttp ? null : await ensureTls(config)
  let server!: Server | HttpsServer
  const app = createInstance(instanceDeps, (rootHandler) => {
    // Only requests no route took reach the UI: API requests never pay for it.
    const unrouted = (req: IncomingMessage, res: ServerResponse) => {
      if (!ui.handle(req, res)) rootHandler(req, res)
    }
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      // Requests from the server get a SecureResponse; injected ones (tests) bring their own response class.
      if (!(res instanceof SecureResponse)) setSecurityHeaders(res, req.url)
      registry!.dispatch(req, res, kernelApp.routing, unrouted)
    }
    const serverOptions = { ServerResponse: SecureResponse }
    server = tls
      ? createHttpsServer({ ...serverOptions, cert: tls.cert, key: tls.key, minVersion: 'TLSv1.2' }, handler)
      : createHttpServer(serverOptions, handler)
    server.keepAliveTimeout = 72_000 // Fastify's own default, which a custom server does not get
    return server
  })
  await app.register(socketHub, { registry, sessions })
  await app.ready()

  // A fleet member's verified call, run through this daemon's routing as its remote identity (built-in plugins only).
  container.register(DISPATCH_SERVICE_ID, {
    useValue: createRemoteDispatch(
      (req, res) => server.emit('request', req, res),
      (req, socket, head) => server.emit('upgrade', req, socket, head),
    ),
  })
  await registry.init()
  await mkdir(config.pluginsDir, { recursive: true })
  // Installs a crash interrupted are finished, leftover staging deleted, before anything scans the folder.
  await recoverInstalls(config.pluginsDir, log, audit)
  let watcher: PluginWatcher | null = null
  let closing = false
  const loadPlugins = async () => {
    await registry!.startUp(async () => {
      for (const plugin of options.plugins ?? []) await registry!.add(plugin)
      if (config.builtinPluginsDir)
        await registry!.loadFolder(config.builtinPluginsDir, true, config.builtinPluginsOnly)
      await registry!.loadFolder(config.pluginsDir, false)
    })
    if (options.watch === false || closing) return
    watcher = await watchPlugins(config.pluginsDir, (dir) => registry!.reconcile(dir, false), log)
    if (closing) await watcher.close()
  }
  let pluginsStarted: Promise<void> | null = null
  const startPlugins = () => (pluginsStarted ??= loadPlugins())
  if (options.startPlugins !== false) await startPlugins()

  const handler = (req: IncomingMessage, res: ServerResponse) => server.emit('request', req, res)
  return {
    config,
    registry,
    services,
    db,
    handler,
    server,
    async listen() {
      await app.listen({
        port: config.port,
        host: config.host,
        listenTextResolver: (address) => `listening on ${address.replace(/^http:/, tls ? 'https:' : 'http:')}`,
      })
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : config.port
      const host =
        config.host === '0.0.0.0' || config.host === '::'
          ? 'localhost'
          : config.host.includes(':')
            ? `[${config.host}]`
            : config.host
      return `${tls ? 'https' : 'http'}://${host}:${port}`
    },
    startPlugins,
    async close() {
      closing = true
      await watcher?.close()
      await registry!.close()
      audit.stop()
      sessions.connections.close()
      await app.close()
      await kernelApp.close()
      await db.close()
    },
  }
}
