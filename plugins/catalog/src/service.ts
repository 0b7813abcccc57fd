/**
 * The catalog: its sources (the built-in file plus those an admin adds, kept in the plugin's settings), the
 * list with what is installed (by the provenance labels on containers, never by name), install (fields rendered
 * into the RunSpec, then the containers plugin's one validated creation path) and uninstall.
 */
import { createHash } from 'node:crypto'
import { isAbsolute } from 'node:path'
import gt from 'semver/functions/gt.js'
import valid from 'semver/functions/valid.js'
import { auditOutcome } from '@hostd/sdk'
import type { AuditActor, AuditService, Logger, OptionalServices, Role, Settings } from '@hostd/sdk'
import {
  LABELS,
  stacksInstaller,
  type ContainersService,
  type CreateHooks,
  type LabelledContainer,
} from './containers.ts'
import { CatalogErrors } from './errors.ts'
import { needsAdmin, renderEnv, renderRunSpec } from './render.ts'
import type { CatalogApp, CatalogEntry, InstallRequest, SourceStatus } from './schemas.ts'
import { checkUrl, loadDirectory, loadFile, loadUrl, type FetchOptions, type Loaded } from './sources.ts'

export const BUILTIN_ID = 'builtin'

interface SourceConfig {
  id: string
  kind: 'directory' | 'url'
  location: string
}

interface Source {
  config: SourceConfig | { id: typeof BUILTIN_ID; kind: 'builtin'; location: string }
  status: SourceStatus
  apps: CatalogEntry[]
}

export interface CatalogConfig {
  builtinFile: string
  fetch: FetchOptions
}

function emptyStatus(config: Source['config']): SourceStatus {
  return {
    id: config.id,
    kind: config.kind,
    location: config.location,
    name: '',
    ok: false,
    error: 'not loaded yet',
    loadedAt: null,
    apps: 0,
    skipped: [],
  }
}

/** Container ports whose web interface speaks TLS (the rest are read as plain HTTP). */
const TLS_PORTS = new Set([443, 8443, 9443])

/**
 * Where an installed app's web interface answers: the entry's `port` is the container port of its web UI (the catalog
 * format says so); the engine tells which host port publishes it (tcp, while the container runs). An app whose entry
 * names no port (a database) has none, and neither has one whose port is not published now.
 */
export function webAddress(
  entry: Pick<CatalogEntry, 'port' | 'path'>,
  group: Pick<LabelledContainer, 'ports'>[],
): { port: number; scheme: 'http' | 'https'; path: string } | null {
  if (entry.port === undefined) return null
  const published = group
    .flatMap((c) => c.ports ?? [])
    .find((p) => p.containerPort === entry.port && p.protocol === 'tcp' && p.hostPort > 0)
  if (!published) return null
  const path = entry.path ? (entry.path.startsWith('/') ? entry.path : `/${entry.path}`) : '/'
  return { port: published.hostPort, scheme: TLS_PORTS.has(entry.port) ? 'https' : 'http', path }
}

export class CatalogService {
  readonly #settings: Settings
  readonly #audit: AuditService
  readonly #log: Logger
  readonly #containers: ContainersService
  readonly #optional: OptionalServices | undefined
  readonly #config: CatalogConfig
  /** In order: built-in first, then the admin's sources in the order added. */
  #sources: Source[] = []
  #changes: Promise<unknown> = Promise.resolve()

  constructor(
    deps: {
      settings: Settings
      audit: AuditService
      log: Logger
      containers: ContainersService
      optional?: OptionalServices
    },
    config: CatalogConfig,
  ) {
    this.#settings = deps.settings
    this.#audit = deps.audit
    this.#log = deps.log
    this.#containers = deps.containers
    this.#optional = deps.optional
    this.#config = config
  }

  async start(): Promise<void> {
    const configs: Source['config'][] = [
      { id: BUILTIN_ID, kind: 'builtin', location: this.#config.builtinFile },
      ...((await this.#settings.get<SourceConfig[]>('sources')) ?? []),
    ]
    this.#sources = configs.map((config) => ({ config, status: emptyStatus(config), apps: [] }))
    // Local sources are read before the plugin answers; URL sources in the background, so a slow server never
    // holds the daemon's start (their status says "not loaded yet" until then).
    for (const s of this.#sources.filter((s) => s.config.kind === 'url')) void this.#load(s)
    await Promise.all(this.#sources.filter((s) => s.config.kind !== 'url').map((s) => this.#load(s)))
  }

  async #load(source: Source): Promise<void> {
    const { kind, location } = source.config
    let loaded: Loaded
    try {
      loaded =
        kind === 'url'
          ? await loadUrl(location, this.#config.fetch)
          : kind === 'directory'
            ? await loadDirectory(location)
            : await loadFile(location)
    } catch (err) {
      source.apps = []
      source.status = {
        ...emptyStatus(source.config),
        error: (err as Error).message,
        loadedAt: new Date().toISOString(),
      }
      this.#log.warn({ source: source.config.id, err: (err as Error).message }, 'catalog: source not read')
      return
    }
    source.apps = loaded.apps
    source.status = {
      ...emptyStatus(source.config),
      name: loaded.name,
      ok: true,
      error: null,
      loadedAt: new Date().toISOString(),
      apps: loaded.apps.length,
      skipped: loaded.skipped,
    }
    if (loaded.skipped.length)
      this.#log.info({ source: source.config.id, skipped: loaded.skipped.length }, 'catalog: entries skipped')
  }

  #change<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.#changes.then(fn, fn)
    this.#changes = next.catch(() => undefined)
    return next
  }

  sources(): SourceStatus[] {
    return this.#sources.map((s) => s.status)
  }

  #source(id: string): Source {
    const found = this.#sources.find((s) => s.config.id === id)
    if (!found) throw CatalogErrors.sourceNotFound(`No catalog source ${id}`)
    return found
  }

  async addSource(
    body: { kind: 'directory' | 'url'; location: string; id?: string },
    actor: AuditActor,
  ): Promise<SourceStatus> {
    if (body.kind === 'url') {
      const problem = checkUrl(body.location)
      if (problem) throw CatalogErrors.sourceInvalid(`${body.location.slice(0, 200)}: ${problem}`)
    } else if (!isAbsolute(body.location) || body.location.includes('\0')) {
      throw CatalogErrors.sourceInvalid('A directory source is an absolute path on the host')
    }
    const source = await this.#change(async () => {
      const id =
        body.id ??
        `${body.kind === 'url' ? 'url' : 'dir'}-${createHash('sha256').update(body.location).digest('hex').slice(0, 8)}`
      if (this.#sources.some((s) => s.config.id === id))
        throw CatalogErrors.sourceExists(`A catalog source named ${id} exists`)
      if (this.#sources.some((s) => s.config.location === body.location))
        throw CatalogErrors.sourceExists(`${body.location} is already a catalog source`)
      const config: SourceConfig = { id, kind: body.kind, location: body.location }
      const added: Source = { config, status: emptyStatus(config), apps: [] }
      this.#sources.push(added)
      await this.#settings.set(
        'sources',
        this.#sources.map((s) => s.config).filter((c) => c.kind !== 'builtin'),
      )
      return added
    })
    await this.#load(source)
    await this.#audit.record(
      {
        action: 'catalog.source.add',
        target: source.config.id,
        detail: {
          kind: body.kind,
          location: body.location,
          ok: source.status.ok,
          apps: source.status.apps,
          skipped: source.status.skipped.length,
        },
      },
      actor,
    )
    return source.status
  }

  async removeSource(id: string, actor: AuditActor): Promise<void> {
    if (id === BUILTIN_ID) throw CatalogErrors.sourceBuiltin()
    const removed = await this.#change(async () => {
      const found = this.#source(id)
      this.#sources = this.#sources.filter((s) => s !== found)
      await this.#settings.set(
        'sources',
        this.#sources.map((s) => s.config).filter((c) => c.kind !== 'builtin'),
      )
      return found
    })
    await this.#audit.record(
      {
        action: 'catalog.source.remove',
        target: id,
        detail: { kind: removed.config.kind, location: removed.config.location },
      },
      actor,
    )
  }

  async refreshSource(id: string, actor: AuditActor): Promise<SourceStatus> {
    const source = this.#source(id)
    await this.#load(source)
    await this.#audit.record(
      {
        action: 'catalog.source.refresh',
        target: id,
        result: source.status.ok ? 'success' : 'failure',
        detail: { ok: source.status.ok, apps: source.status.apps, skipped: source.status.skipped.length },
      },
      actor,
    )
    return source.status
  }

  /** The app `appId` from `source`, or from the first source that has it. */
  #entry(appId: string, sourceId?: string): { entry: CatalogEntry; source: string } {
    const pool = sourceId ? [this.#source(sourceId)] : this.#sources
    for (const s of pool) {
      const entry = s.apps.find((a) => a.id === appId)
      if (entry) return { entry, source: s.config.id }
    }
    throw CatalogErrors.appNotFound(`No app ${appId} in ${sourceId ? `source ${sourceId}` : 'the catalog'}`)
  }

  async list(): Promise<{
    apps: CatalogApp[]
    categories: string[]
    sources: SourceStatus[]
    engine: { available: boolean; message: string }
  }> {
    // The list works whatever the engine does: a failed look-up of installed apps shows none and says why.
    const [engine, installed] = await Promise.all([
      this.#containers.engineStatus().then((e) => ({ available: e.available, message: e.message })),
      this.#containers.listLabelled(LABELS.app).then(
        (list) => ({ list, error: null }),
        (err: Error) => ({ list: [] as LabelledContainer[], error: err.message }),
      ),
    ])
    if (installed.error) engine.message = `Installed apps could not be read: ${installed.error}`
    const bySourceApp = new Map<string, LabelledContainer[]>()
    for (const c of installed.list) {
      const key = `${c.labels[LABELS.source] ?? ''}\u0000${c.labels[LABELS.app] ?? ''}`
      bySourceApp.set(key, [...(bySourceApp.get(key) ?? []), c])
    }
    const apps: CatalogApp[] = []
    const categories = new Set<string>()
    for (const source of this.#sources) {
      for (const e of source.apps) {
        e.categories.forEach((c) => categories.add(c))
        // An app that is a stack is one install (its stack), however many containers it has.
        const containers = bySourceApp.get(`${source.config.id}\u0000${e.id}`) ?? []
        const seenStacks = new Set<string>()
        const installs = containers.flatMap((c) => {
          const stack = c.labels[LABELS.stack]
          if (stack !== undefined) {
            if (seenStacks.has(stack)) return []
            seenStacks.add(stack)
          }
          const group = stack === undefined ? [c] : containers.filter((o) => o.labels[LABELS.stack] === stack)
          const version = c.labels[LABELS.version] ?? ''
          const versionUpdate = Boolean(valid(version)) && gt(e.version, version)
          const imageUpdate = group.some((g) => g.updateAvailable)
          const web = webAddress(e, group)
          return [
            {
              containerId: c.id,
              name: stack ?? c.name,
              state: group.every((g) => g.state === 'running') ? 'running' : c.state,
              version,
              versionUpdate,
              imageUpdate,
              updateAvailable: versionUpdate || imageUpdate,
              ...(stack !== undefined ? { stack } : {}),
              web,
            },
          ]
        })
        apps.push({
          id: e.id,
          source: source.config.id,
          version: e.version,
          title: e.title,
          tagline: e.tagline ?? '',
          description: e.description ?? '',
          categories: e.categories,
          icon: e.icon ?? null,
          gallery: e.gallery ?? [],
          website: e.website ?? null,
          developer: e.developer ?? null,
          architectures: e.architectures ?? [],
          port: e.port ?? null,
          path: e.path ?? null,
          note: e.note ?? null,
          defaultCredentials: e.defaultCredentials ?? null,
          image: e.runSpec?.image ?? '',
          kind: e.compose ? ('stack' as const) : ('container' as const),
          fields: e.fields ?? [],
          needsAdmin: needsAdmin(e),
          installed: installs.length > 0,
          updateAvailable: installs.some((i) => i.updateAvailable),
          installs,
        })
      }
    }
    return { apps, categories: [...categories].sort((a, b) => a.localeCompare(b)), sources: this.sources(), engine }
  }

  /** Renders the fields into the RunSpec and creates through the containers plugin, whose role rules decide. */
  async install(
    req: InstallRequest,
    role: Role,
    actor: AuditActor,
    hooks: CreateHooks = {},
  ): Promise<{ containerId: string; name: string; appId: string; source: string; version: string; stack?: string }> {
    const { entry, source } = this.#entry(req.appId, req.source)
    const target = `${source}/${entry.id}`
    if (entry.compose) return this.#installStack(entry, source, req, role, actor, hooks)
    // The values are not recorded: a password field's value is a secret. Their keys are.
    const { result } = await auditOutcome(
      this.#audit,
      { action: 'catalog.install', target },
      actor,
      async () => {
        const spec = renderRunSpec(entry, req.values ?? {}, req.name)
        const out = await this.#containers.run(spec, role, actor, hooks, {
          labels: { [LABELS.app]: entry.id, [LABELS.source]: source, [LABELS.version]: entry.version },
        })
        const result = { containerId: out.id, name: out.name, appId: entry.id, source, version: entry.version }
        return { result, image: spec.image }
      },
      ({ result, image }) => ({ ...result, image, fields: Object.keys(req.values ?? {}) }),
    )
    return result
  }

  /**
   * An app that is a stack: its compose file and its fields as the stack's .env, installed (or updated) through the
   * stacks plugin, whose deploy creates every container through the containers plugin's path.
   */
  async #installStack(
    entry: CatalogEntry,
    source: string,
    req: InstallRequest,
    role: Role,
    actor: AuditActor,
    hooks: CreateHooks,
  ) {
    const target = `${source}/${entry.id}`
    const name = req.name ?? entry.id
    const { result } = await auditOutcome(
      this.#audit,
      { action: 'catalog.install', target },
      actor,
      async () => {
        const stacks = this.#optional?.get(stacksInstaller)
        if (!stacks)
          throw CatalogErrors.stacksUnavailable(`${entry.title} is a stack: the stacks plugin must be enabled`)
        const out = await stacks.install(
          {
            name,
            compose: entry.compose!,
            env: renderEnv(entry, req.values ?? {}),
            labels: {
              [LABELS.app]: entry.id,
              [LABELS.source]: source,
              [LABELS.version]: entry.version,
              [LABELS.stack]: name,
            },
          },
          role,
          actor,
          (event) => {
            if (event.type === 'pull')
              hooks.onPull?.({
                status: event.status ?? '',
                id: event.layer,
                current: event.current,
                total: event.total,
              })
          },
        )
        const result = { containerId: '', name, stack: name, appId: entry.id, source, version: entry.version }
        return { result, services: out.services.map((s) => s.service) }
      },
      ({ result, services }) => ({ ...result, services, fields: Object.keys(req.values ?? {}) }),
    )
    return result
  }

  /** Removes a container the catalog installed (found by its labels) and, if asked, its named volumes. */
  async uninstall(container: string, removeVolumes: boolean, actor: AuditActor) {
    const ours = (await this.#containers.listLabelled(LABELS.app)).find(
      (c) => c.id === container || (container.length >= 12 && c.id.startsWith(container)) || c.name === container,
    )
    if (!ours) throw CatalogErrors.notCatalogContainer(`No container installed from the catalog is called ${container}`)
    const appId = ours.labels[LABELS.app] ?? ''
    const stack = ours.labels[LABELS.stack]
    if (stack !== undefined) return this.#uninstallStack(stack, ours, removeVolumes, actor)
    const out = await this.#containers.remove(ours.id, actor, { volumes: removeVolumes })
    await this.#audit.record(
      {
        action: 'catalog.uninstall',
        target: `${ours.labels[LABELS.source] ?? ''}/${appId}`,
        detail: {
          containerId: out.id,
          name: out.name,
          removeVolumes,
          removedVolumes: out.removedVolumes,
          keptVolumes: out.keptVolumes.map((v) => v.name),
        },
      },
      actor,
    )
    return {
      containerId: out.id,
      name: out.name,
      appId,
      removedVolumes: out.removedVolumes,
      keptVolumes: out.keptVolumes,
    }
  }

  /** An app that is a stack goes as one: the stacks plugin takes it down (volumes when asked) and deletes it. */
  async #uninstallStack(stack: string, ours: LabelledContainer, removeVolumes: boolean, actor: AuditActor) {
    const stacks = this.#optional?.get(stacksInstaller)
    if (!stacks) throw CatalogErrors.stacksUnavailable(`${stack} is a stack: the stacks plugin must be enabled`)
    const out = await stacks.uninstall(stack, actor, { volumes: removeVolumes })
    const appId = ours.labels[LABELS.app] ?? ''
    await this.#audit.record(
      {
        action: 'catalog.uninstall',
        target: `${ours.labels[LABELS.source] ?? ''}/${appId}`,
        detail: { stack, containers: out.containers, removeVolumes, removedVolumes: out.volumes },
      },
      actor,
    )
    return {
      containerId: ours.id,
      name: stack,
      appId,
      removedVolumes: out.volumes,
      keptVolumes: out.keptVolumes.map((name) => ({ name, reason: 'not asked to remove volumes' })),
    }
  }
}
