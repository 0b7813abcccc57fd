/**
 * What one load of the plugin holds: the stacks folder (one folder per stack: its compose file and `.env`, read
 * and written as they are, watched for changes made outside hostd), the compose validator (loaded on first use),
 * one operation at a time per stack, and the live events the socket streams.
 */
import { watch, type FSWatcher } from 'node:fs'
import { lstat, mkdir, readdir, readFile, realpath, rename, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { basename, dirname, isAbsolute, join } from 'node:path'
import type { AuditActor, AuditService, Logger, Role } from '@hostd/sdk'
import { auditOutcome, roleSatisfies } from '@hostd/sdk'
import { deployProject, LABELS, reverseOrder, type Progress, type ServiceOutcome } from './apply.ts'
import type { ContainerProjectsService, ContainersService, ProjectContainer } from './containers.ts'
import { StackErrors } from './errors.ts'
import { loadProject, type Issue, type ProjectModel } from './model/compose.ts'
import { inside } from './model/translate.ts'
import { ComposeValidator } from './model/validator.ts'

/** The file names compose looks for, in its order. */
export const COMPOSE_NAMES = ['compose.yaml', 'compose.yml', 'docker-compose.yaml', 'docker-compose.yml']
export const STACK_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/
const MAX_FILE = 1024 * 1024
/** hostd's own metadata in a stack's folder: the provenance labels a plugin gave it (the catalog's). */
const META_FILE = '.hostd.json'
const RECENT = 500

export interface StacksDeps {
  containers: ContainersService
  projects: ContainerProjectsService
  audit: AuditService
  log: Logger
}

export type StackEvent =
  | { type: 'progress'; stack: string; event: Progress }
  | { type: 'operation'; stack: string; operation: string; state: 'started' | 'done' | 'failed'; message?: string }
  | { type: 'changed'; stack: string | null }

export interface ServiceState {
  name: string
  container: string | null
  image: string
  state: string
  health: string | null
}

export interface StackSummary {
  name: string
  state: 'running' | 'partial' | 'stopped' | 'down'
  services: ServiceState[]
  adopted: boolean
  operation: string | null
  issues: number
}

export interface Validation {
  ok: boolean
  issues: Issue[]
  warnings: Issue[]
}

export class StacksService {
  readonly dir: string
  readonly #deps: StacksDeps
  readonly #validator = new ComposeValidator()
  readonly #busy = new Map<string, string>()
  readonly #listeners = new Set<(e: StackEvent) => void>()
  readonly #recent = new Map<string, StackEvent[]>()
  readonly #healthTimeoutMs: number
  #watcher: FSWatcher | null = null
  #timer: NodeJS.Timeout | null = null
  #changed = new Set<string>()

  constructor(deps: StacksDeps, options: { dir: string; healthTimeoutMs: number }) {
    this.#deps = deps
    this.dir = options.dir
    this.#healthTimeoutMs = options.healthTimeoutMs
  }

  /** Creates the stacks folder and watches it (one recursive watch; changes are told once per 200 ms). */
  async start(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 })
    try {
      this.#watcher = watch(this.dir, { recursive: true }, (_event, file) => {
        const name = file ? String(file).split('/')[0]! : null
        this.#changed.add(name ?? '')
        this.#timer ??= setTimeout(() => {
          this.#timer = null
          const names = [...this.#changed]
          this.#changed.clear()
          for (const n of names) this.#emit({ type: 'changed', stack: n || null })
        }, 200)
      })
      this.#watcher.on('error', (err) => this.#deps.log.warn({ err }, 'stacks folder watch failed'))
    } catch (err) {
      this.#deps.log.warn({ err }, 'stacks folder is not watched')
    }
  }

  stop(): void {
    this.#watcher?.close()
    this.#watcher = null
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    this.#listeners.clear()
  }

  subscribe(fn: (e: StackEvent) => void): () => void {
    this.#listeners.add(fn)
    return () => this.#listeners.delete(fn)
  }

  #emit(e: StackEvent): void {
    if (e.type !== 'changed') {
      const list = this.#recent.get(e.stack) ?? []
      if (e.type === 'operation' && e.state === 'started') list.length = 0
      list.push(e)
      if (list.length > RECENT) list.splice(0, list.length - RECENT)
      this.#recent.set(e.stack, list)
    }
    for (const fn of this.#listeners) {
      try {
        fn(e)
      } catch (err) {
        this.#deps.log.warn({ err }, 'stacks event listener failed')
      }
    }
  }

  // ---- files -------------------------------------------------------------------------------------------------

  /** The stack's folder, its real path (an adopted stack's folder is a link to the project's own), its files. */
  async #locate(name: string): Promise<{ dir: string; real: string; composeFile: string; adopted: boolean }> {
    if (!STACK_NAME.test(name)) throw StackErrors.notFound(`No stack named ${name}`)
    const dir = join(this.dir, name)
    let real: string
    let adopted = false
    try {
      adopted = (await lstat(dir)).isSymbolicLink()
      real = await realpath(dir)
      if (!(await stat(real)).isDirectory()) throw new Error('not a folder')
    } catch {
      throw StackErrors.notFound(`No stack named ${name}`)
    }
    for (const file of COMPOSE_NAMES) {
      const s = await stat(join(real, file)).catch(() => null)
      if (s?.isFile()) return { dir, real, composeFile: file, adopted }
    }
    throw StackErrors.notFound(`Stack ${name} has no compose file (${COMPOSE_NAMES.join(', ')})`)
  }

  async #read(path: string): Promise<string | null> {
    try {
      const s = await stat(path)
      if (!s.isFile()) return null
      if (s.size > MAX_FILE) throw StackErrors.composeInvalid(`${basename(path)} is larger than 1 MiB`)
      return await readFile(path, 'utf8')
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') return null
      throw err
    }
  }

  async files(
    name: string,
  ): Promise<{ compose: string; env: string; composeFile: string; dir: string; adopted: boolean }> {
    const where = await this.#locate(name)
    const compose = (await this.#read(join(where.real, where.composeFile))) ?? ''
    const env = (await this.#read(join(where.real, '.env'))) ?? ''
    return { compose, env, composeFile: where.composeFile, dir: where.real, adopted: where.adopted }
  }

  /** A file of the stack's folder for env_file, confined to it (links followed, then checked). */
  #folderReader(real: string) {
    return async (relative: string): Promise<string | null> => {
      const path = join(real, relative)
      let resolved: string
      try {
        resolved = await realpath(path)
      } catch {
        return null
      }
      if (!inside(real, resolved)) return null
      return this.#read(resolved)
    }
  }

  async validate(name: string, compose: string, env: string, profiles: string[] = []): Promise<Validation> {
    const dir = await this.#locate(name).then(
      (w) => w.real,
      () => join(this.dir, name),
    )
    const out = await loadProject(
      { name, dir, compose, env, profiles, readFile: this.#folderReader(dir) },
      this.#validator,
    )
    return out.ok
      ? { ok: true, issues: [], warnings: out.project.warnings }
      : { ok: false, issues: out.issues, warnings: out.warnings }
  }

  /** The model, or the 400 naming the first problems with their lines. */
  async #model(
    name: string,
    profiles: string[] = [],
  ): Promise<{ project: ProjectModel; composeFile: string; env: boolean }> {
    const files = await this.files(name)
    const out = await loadProject(
      {
        name,
        dir: files.dir,
        compose: files.compose,
        env: files.env,
        profiles,
        readFile: this.#folderReader(files.dir),
      },
      this.#validator,
    )
    if (!out.ok) throw issuesError(out.issues)
    return { project: out.project, composeFile: files.composeFile, env: files.env !== '' }
  }

  async #writeFiles(real: string, composeFile: string, compose: string | undefined, env: string | undefined) {
    const put = async (file: string, text: string) => {
      const tmp = join(real, `.${file}.hostd-${process.pid}.tmp`)
      await writeFile(tmp, text, { mode: 0o600 })
      await rename(tmp, join(real, file))
    }
    if (compose !== undefined) await put(composeFile, compose)
    if (env !== undefined) await put('.env', env)
  }

  async create(input: { name: string; compose: string; env?: string }, actor: AuditActor) {
    const dir = join(this.dir, input.name)
    if (await lstat(dir).catch(() => null)) throw StackErrors.exists(`A stack named ${input.name} exists`)
    const check = await this.validate(input.name, input.compose, input.env ?? '')
    if (!check.ok) throw issuesError(check.issues)
    return this.#audited('stack.create', input.name, actor, async () => {
      await mkdir(dir, { mode: 0o700 })
      await this.#writeFiles(dir, 'compose.yaml', input.compose, input.env ?? '')
      this.#emit({ type: 'changed', stack: input.name })
      return { name: input.name }
    })
  }

  async save(name: string, input: { compose?: string; env?: string }, actor: AuditActor) {
    const files = await this.files(name)
    const compose = input.compose ?? files.compose
    const env = input.env ?? files.env
    const check = await this.validate(name, compose, env)
    if (!check.ok) throw issuesError(check.issues)
    return this.#audited(
      'stack.save',
      name,
      actor,
      async () => {
        await this.#writeFiles(files.dir, files.composeFile, input.compose, input.env)
        this.#emit({ type: 'changed', stack: name })
        return { name, warnings: check.warnings }
      },
      () => ({ compose: input.compose !== undefined, env: input.env !== undefined }),
    )
  }

  async remove(name: string, actor: AuditActor) {
    const where = await this.#locate(name)
    const left = await this.#deps.projects.containers(`${LABELS.project}=${name}`)
    if (left.length) throw StackErrors.inUse(`Stack ${name} still has ${left.length} container(s): take it down first`)
    return this.#audited('stack.delete', name, actor, async () => {
      // An adopted stack's folder is a link to the project's own folder: only the link goes.
      if (where.adopted) await rm(where.dir)
      else await rm(where.dir, { recursive: true, force: true })
      this.#emit({ type: 'changed', stack: name })
      return { name, removed: true }
    })
  }

  // ---- state -------------------------------------------------------------------------------------------------

  async #names(): Promise<{ name: string; adopted: boolean }[]> {
    const entries = await readdir(this.dir, { withFileTypes: true }).catch(() => [])
    const out: { name: string; adopted: boolean }[] = []
    for (const e of entries) {
      if (!STACK_NAME.test(e.name) || !(e.isDirectory() || e.isSymbolicLink())) continue
      out.push({ name: e.name, adopted: e.isSymbolicLink() })
    }
    return out.sort((a, b) => a.name.localeCompare(b.name))
  }

  #serviceStates(containers: ProjectContainer[], declared: string[]): ServiceState[] {
    const out: ServiceState[] = []
    const seen = new Set<string>()
    for (const c of containers) {
      const service = c.labels[LABELS.service] ?? c.name
      seen.add(service)
      out.push({ name: service, container: c.name, image: c.image, state: c.state, health: c.health })
    }
    for (const s of declared)
      if (!seen.has(s)) out.push({ name: s, container: null, image: '', state: 'absent', health: null })
    return out.sort((a, b) => a.name.localeCompare(b.name))
  }

  static stateOf(services: ServiceState[]): StackSummary['state'] {
    const present = services.filter((s) => s.container)
    if (present.length === 0) return 'down'
    const running = present.filter((s) => s.state === 'running').length
    if (running === 0) return 'stopped'
    return running === services.length ? 'running' : 'partial'
  }

  async #declared(name: string): Promise<{ services: string[]; issues: number }> {
    try {
      const files = await this.files(name)
      const out = await loadProject(
        { name, dir: files.dir, compose: files.compose, env: files.env, readFile: this.#folderReader(files.dir) },
        this.#validator,
      )
      return out.ok
        ? { services: [...out.project.services.keys()], issues: 0 }
        : { services: [], issues: out.issues.length }
    } catch {
      return { services: [], issues: 1 }
    }
  }

  async list(): Promise<{ stacks: StackSummary[]; adoptable: Adoptable[] }> {
    const all = await this.#deps.projects.containers(LABELS.project)
    const byProject = new Map<string, ProjectContainer[]>()
    for (const c of all) {
      const p = c.labels[LABELS.project]!
      byProject.set(p, [...(byProject.get(p) ?? []), c])
    }
    const stacks: StackSummary[] = []
    for (const { name, adopted } of await this.#names()) {
      const declared = await this.#declared(name)
      const services = this.#serviceStates(byProject.get(name) ?? [], declared.services)
      byProject.delete(name)
      stacks.push({
        name,
        state: StacksService.stateOf(services),
        services,
        adopted,
        operation: this.#busy.get(name) ?? null,
        issues: declared.issues,
      })
    }
    const adoptable: Adoptable[] = [...byProject].map(([project, containers]) => ({
      project,
      workingDir: containers[0]!.labels[LABELS.workingDir] ?? '',
      configFiles: (containers[0]!.labels[LABELS.configFiles] ?? '').split(',').filter(Boolean),
      services: this.#serviceStates(containers, []),
    }))
    return { stacks, adoptable }
  }

  async get(name: string, role: Role) {
    const files = await this.files(name)
    const validation = await this.validate(name, files.compose, files.env)
    const declared = validation.ok ? (await this.#declared(name)).services : []
    const services = this.#serviceStates(await this.#deps.projects.containers(`${LABELS.project}=${name}`), declared)
    const envKeys = [...files.env.matchAll(/^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=/gm)].map((m) => m[1]!)
    return {
      name,
      composeFile: files.composeFile,
      compose: files.compose,
      // The .env often holds passwords: viewers see its names, not its values.
      env: roleSatisfies(role, 'operator') ? files.env : null,
      envKeys,
      adopted: files.adopted,
      state: StacksService.stateOf(services),
      services,
      validation,
      operation: this.#busy.get(name) ?? null,
      progress: (this.#recent.get(name) ?? []).filter((e) => e.type !== 'changed'),
    }
  }

  // ---- operations --------------------------------------------------------------------------------------------

  #audited<T>(
    action: string,
    target: string,
    actor: AuditActor,
    fn: () => Promise<T>,
    detail: (out: T) => Record<string, unknown> = () => ({}),
  ): Promise<T> {
    return auditOutcome(this.#deps.audit, { action, target }, actor, fn, detail)
  }

  /** Runs `fn` as the stack's one operation (409 while another runs), told on the socket as it starts and ends. */
  async #operation<T>(
    name: string,
    operation: string,
    actor: AuditActor,
    fn: () => Promise<T>,
    detail?: (o: T) => Record<string, unknown>,
  ): Promise<T> {
    const running = this.#busy.get(name)
    if (running) throw StackErrors.busy(`Stack ${name} is busy (${running}): wait for it to finish`)
    this.#busy.set(name, operation)
    this.#emit({ type: 'operation', stack: name, operation, state: 'started' })
    try {
      const out = await this.#audited(`stack.${operation}`, name, actor, fn, detail)
      this.#emit({ type: 'operation', stack: name, operation, state: 'done' })
      return out
    } catch (err) {
      this.#emit({ type: 'operation', stack: name, operation, state: 'failed', message: (err as Error).message })
      throw err
    } finally {
      this.#busy.delete(name)
    }
  }

  async deploy(
    name: string,
    role: Role,
    actor: AuditActor,
    options: { profiles?: string[]; pull?: boolean } = {},
  ): Promise<{ name: string; services: ServiceOutcome[]; warnings: Issue[] }> {
    await this.#locate(name)
    const operation = options.pull ? 'update' : 'deploy'
    return this.#operation(
      name,
      operation,
      actor,
      async () => {
        const { project, composeFile, env } = await this.#model(name, options.profiles)
        const services = await deployProject(
          { containers: this.#deps.containers, projects: this.#deps.projects, healthTimeoutMs: this.#healthTimeoutMs },
          project,
          role,
          actor,
          {
            pull: options.pull ? 'always' : 'missing',
            configFile: join(project.dir, composeFile),
            envFile: env ? join(project.dir, '.env') : null,
            labels: await this.#metaLabels(project.dir),
          },
          (event) => this.#emit({ type: 'progress', stack: name, event }),
        )
        return { name, services, warnings: project.warnings }
      },
      (o) => ({ services: o.services.map((s) => `${s.service}:${s.action}`) }),
    )
  }

  async #modelOrNull(name: string): Promise<ProjectModel | null> {
    return this.#model(name).then(
      (m) => m.project,
      () => null,
    )
  }

  /** stop or restart every container of the stack (dependents stop first; restart follows the dependencies). */
  async lifecycle(name: string, action: 'stop' | 'restart' | 'start', actor: AuditActor) {
    await this.#locate(name)
    return this.#operation(name, action, actor, async () => {
      const model = await this.#modelOrNull(name)
      const containers = await this.#deps.projects.containers(`${LABELS.project}=${name}`)
      const ordered = action === 'stop' ? reverseOrder(containers, model) : reverseOrder(containers, model).reverse()
      const out: { service: string; before: string; after: string }[] = []
      for (const c of ordered) {
        const r = await this.#deps.projects.action(c.id, action, actor)
        const service = c.labels[LABELS.service] ?? c.name
        out.push({ service, ...r })
        const step = action === 'stop' ? 'stopped' : action === 'restart' ? 'restarted' : 'started'
        this.#emit({ type: 'progress', stack: name, event: { type: 'service', stack: name, service, step } })
      }
      return { name, services: out }
    })
  }

  async down(name: string, actor: AuditActor, options: { volumes?: boolean } = {}) {
    await this.#locate(name)
    return this.#operation(
      name,
      'down',
      actor,
      async () => {
        const model = await this.#modelOrNull(name)
        const label = `${LABELS.project}=${name}`
        const containers = reverseOrder(await this.#deps.projects.containers(label), model)
        const removed: string[] = []
        for (const c of containers) {
          await this.#deps.containers.remove(c.id, actor)
          removed.push(c.name)
          const service = c.labels[LABELS.service] ?? c.name
          this.#emit({
            type: 'progress',
            stack: name,
            event: { type: 'service', stack: name, service, step: 'removed' },
          })
        }
        const networks: string[] = []
        for (const n of await this.#deps.projects.networks(label)) {
          await this.#deps.projects.removeNetwork(n.name, actor)
          networks.push(n.name)
        }
        const volumes: string[] = []
        const keptVolumes: string[] = []
        for (const v of await this.#deps.projects.volumes(label)) {
          if (options.volumes) {
            await this.#deps.projects.removeVolume(v.name, actor)
            volumes.push(v.name)
          } else keptVolumes.push(v.name)
        }
        return { name, containers: removed, networks, volumes, keptVolumes }
      },
      (o) => ({ containers: o.containers, networks: o.networks, volumes: o.volumes, keptVolumes: o.keptVolumes }),
    )
  }

  async serviceAction(name: string, service: string, action: 'start' | 'stop' | 'restart', actor: AuditActor) {
    await this.#locate(name)
    const containers = (await this.#deps.projects.containers(`${LABELS.project}=${name}`)).filter(
      (c) => c.labels[LABELS.service] === service,
    )
    if (containers.length === 0) throw StackErrors.serviceNotFound(`Stack ${name} has no container for ${service}`)
    return this.#operation(name, `service.${action}`, actor, async () => {
      const out: { container: string; before: string; after: string }[] = []
      for (const c of containers)
        out.push({ container: c.name, ...(await this.#deps.projects.action(c.id, action, actor)) })
      return { name, service, containers: out }
    })
  }

  /**
   * Adopts a project the compose CLI made: its folder (the working_dir label) becomes the stack's, through a link
   * named after the project in the stacks folder, so the CLI and hostd keep reading the same files.
   */
  async adopt(project: string, actor: AuditActor) {
    if (!STACK_NAME.test(project))
      throw StackErrors.adoptRefused(`Project ${project}'s name is not a stack name (a-z, 0-9, _ and -)`)
    if (await lstat(join(this.dir, project)).catch(() => null))
      throw StackErrors.exists(`A stack named ${project} exists`)
    const containers = await this.#deps.projects.containers(`${LABELS.project}=${project}`)
    if (containers.length === 0) throw StackErrors.notFound(`No compose project named ${project} on this engine`)
    const labels = containers[0]!.labels
    const workingDir = labels[LABELS.workingDir] ?? ''
    const files = (labels[LABELS.configFiles] ?? '').split(',').filter(Boolean)
    if (!isAbsolute(workingDir)) throw StackErrors.adoptRefused(`Project ${project} names no working folder`)
    if (files.length !== 1)
      throw StackErrors.adoptRefused(`Project ${project} uses ${files.length} compose files: hostd takes one`)
    const file = isAbsolute(files[0]!) ? files[0]! : join(workingDir, files[0]!)
    if (dirname(file) !== workingDir || !COMPOSE_NAMES.includes(basename(file)))
      throw StackErrors.adoptRefused(
        `Project ${project}'s compose file ${file} is not one of ${COMPOSE_NAMES.join(', ')} in ${workingDir}`,
      )
    const s = await stat(file).catch(() => null)
    if (!s?.isFile()) throw StackErrors.adoptRefused(`Project ${project}'s compose file ${file} is not on this host`)
    return this.#audited(
      'stack.adopt',
      project,
      actor,
      async () => {
        await symlink(workingDir, join(this.dir, project))
        this.#emit({ type: 'changed', stack: project })
        return { name: project, workingDir, composeFile: basename(file) }
      },
      (o) => ({ workingDir: o.workingDir, composeFile: o.composeFile }),
    )
  }

  /** Provenance labels kept in the folder's `.hostd.json` (only keys under `dev.hostd.`). */
  async #metaLabels(real: string): Promise<Record<`dev.hostd.${string}`, string>> {
    const text = await this.#read(join(real, META_FILE)).catch(() => null)
    if (!text) return {}
    try {
      const labels = (JSON.parse(text) as { labels?: Record<string, unknown> }).labels ?? {}
      return Object.fromEntries(
        Object.entries(labels).filter(
          ([k, v]) => k.startsWith('dev.hostd.') && k !== LABELS.stack && typeof v === 'string',
        ),
      ) as Record<`dev.hostd.${string}`, string>
    } catch {
      return {}
    }
  }

  /** The `hostd.stacks` service's install (api.ts): files written (folder made if new), then an update. */
  async install(
    input: { name: string; compose: string; env: string; labels: Record<`dev.hostd.${string}`, string> },
    role: Role,
    actor: AuditActor,
    onProgress?: (event: Progress) => void,
  ) {
    if (!STACK_NAME.test(input.name)) throw StackErrors.composeInvalid(`"${input.name}" is not a stack name`)
    const exists = await this.#locate(input.name).then(
      () => true,
      () => false,
    )
    if (exists) {
      // Only a stack the same caller made is replaced (its provenance labels agree but for a version).
      const { dir } = await this.files(input.name)
      const mine = await this.#metaLabels(dir)
      const same = (a: Record<string, string>, b: Record<string, string>) =>
        Object.keys(b).length > 0 && Object.keys({ ...a, ...b }).every((k) => k.endsWith('.version') || a[k] === b[k])
      if (!same(mine, input.labels)) throw StackErrors.exists(`A stack named ${input.name} exists`)
      await this.save(input.name, { compose: input.compose, env: input.env }, actor)
    } else await this.create({ name: input.name, compose: input.compose, env: input.env }, actor)
    const { dir } = await this.files(input.name)
    await writeFile(join(dir, META_FILE), `${JSON.stringify({ labels: input.labels }, null, 2)}\n`, { mode: 0o600 })
    const off = this.subscribe((e) => {
      if (e.type === 'progress' && e.stack === input.name) onProgress?.(e.event)
    })
    try {
      const out = await this.deploy(input.name, role, actor, { pull: true })
      return { name: out.name, services: out.services }
    } finally {
      off()
    }
  }

  /** The `hostd.stacks` service's uninstall: down (volumes when asked), then the folder. */
  async uninstall(name: string, actor: AuditActor, options: { volumes?: boolean } = {}) {
    const down = await this.down(name, actor, options)
    await this.remove(name, actor)
    return { name, containers: down.containers, volumes: down.volumes, keptVolumes: down.keptVolumes }
  }

  /** The stack's containers, for the logs socket. */
  async containersOf(name: string): Promise<ProjectContainer[]> {
    await this.#locate(name)
    return this.#deps.projects.containers(`${LABELS.project}=${name}`)
  }

  logs(id: string, tail: number) {
    return this.#deps.projects.logs(id, tail, true)
  }
}

export interface Adoptable {
  project: string
  workingDir: string
  configFiles: string[]
  services: ServiceState[]
}

/** The 400 for a file's problems: unsupported keys have their own code; the message lists them with lines. */
export function issuesError(issues: Issue[]) {
  const lines = issues
    .slice(0, 10)
    .map((i) => `${i.line ? `line ${i.line}: ` : ''}${i.message}`)
    .join('; ')
  const more = issues.length > 10 ? ` (and ${issues.length - 10} more)` : ''
  const unsupported = issues.length > 0 && issues.every((i) => i.kind === 'unsupported')
  return (unsupported ? StackErrors.keyUnsupported : StackErrors.composeInvalid)(`${lines}${more}`)
}
