/**
 * Jobs and runs: what a job backs up (hostd's own state always, chosen containers' volumes and bind folders with
 * their definitions, admin-picked folders), the run itself (restic backup with `--json` progress, retention with
 * forget --prune, a periodic check of a data subset, stale locks removed), the schedule, and restores.
 */
import { EventEmitter } from 'node:events'
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdir, readdir, realpath, rename, rm, stat, writeFile } from 'node:fs/promises'
import { dirname, isAbsolute, join, normalize, relative } from 'node:path'
import type {
  AuditActor,
  AuditService,
  Database,
  HelperClient,
  Logger,
  OptionalServices,
  SecretSealer,
  Settings,
} from '@hostd/sdk'
import { HostdError } from '@hostd/sdk'
import type { BackupJobStatus } from './api.ts'
import { type ContainerDefinition, containerBackupService } from './containers.ts'
import { BackupErrors } from './errors.ts'
import { type OpenRepository, Repositories, repositoryName, type StoredRepository } from './repositories.ts'
import { classify, runRestic } from './restic.ts'
import {
  DEFAULT_RETENTION,
  type JobCreate,
  type JobUpdate,
  type JobView,
  type Progress,
  type RepositoryCreate,
  type RepositoryView,
  type RestoreBody,
  type Retention,
  type RunResult,
  type Snapshot,
} from './schemas.ts'

export interface StoredJob {
  id: string
  name: string
  repositoryId: string
  containers: string[]
  stopContainers: boolean
  folders: string[]
  intervalMinutes: number | null
  retention: Retention
  checkEveryDays: number | null
  createdAt: string
}

interface JobState {
  lastResult: RunResult | null
  lastRunAt: string | null
  lastCheck: string | null
  /** The end of the last successful run (the alerts plugin's "no backup for a while"). */
  lastSuccessAt?: string | null
  /** A run started and has not ended (set while it runs: still set after the daemon was killed mid-run). */
  inProgress?: boolean
  /** The job's snapshots in the repository, as far as hostd knows (retention runs once there are more than it keeps). */
  snapshots?: number
}

export interface BackupDeps {
  settings: Settings
  audit: AuditService
  log: Logger
  database: Database
  optional: OptionalServices
  /** Repository passwords, REST credentials and hostd's SSH key, sealed at rest (`tokens.secrets`). */
  secrets: SecretSealer
  /** The root helper (backups through it when `rootHelper`). */
  helper: HelperClient
  dataDir: string
}

export interface BackupOptions {
  /** Where restores to another place may write: name -> absolute folder (HOSTD_FILE_ROOTS, as the storage plugin). */
  roots: { name: string; path: string }[]
  /** The scheduler's clock (a test seam; default Date.now). */
  now?: () => number
  /**
   * Back up through the root helper's `backups.restic-backup` (restic as the daemon's user with CAP_DAC_READ_SEARCH:
   * it reads what the daemon's user may not), for local, REST and S3 repositories (HOSTD_BACKUPS_ROOT_HELPER=1).
   */
  rootHelper?: boolean
}

/** Scheduled runs are audited as the system's. */
const SCHEDULER: AuditActor = { userId: null, username: 'backups-scheduler', ip: null }
const MAX_TIMER_MS = 60 * 60 * 1000
const STAGING = 'staging'

export class BackupService {
  readonly events = new EventEmitter()
  readonly repositories: Repositories
  readonly #deps: BackupDeps
  readonly #dir: string
  readonly #roots: { name: string; path: string }[]
  readonly #rootHelper: boolean
  readonly #now: () => number
  readonly #running = new Map<string, { progress: Progress; done: Promise<RunResult> }>()
  /** One restic writer per repository at a time (a backup, a restore, forget). */
  readonly #repoLocks = new Map<string, Promise<unknown>>()
  #jobsLock: Promise<unknown> = Promise.resolve()
  #timer: NodeJS.Timeout | null = null
  #stopped = false
  /** Aborted on stop: a backup in progress gets SIGTERM (restic then removes its own lock), its containers restart. */
  #abort = new AbortController()

  private constructor(deps: BackupDeps, options: BackupOptions) {
    this.#deps = deps
    this.#dir = join(deps.dataDir, 'backups')
    this.#roots = options.roots
    this.#rootHelper = options.rootHelper ?? false
    this.#now = options.now ?? Date.now
    this.repositories = new Repositories(deps.settings, deps.secrets, this.#dir)
    this.events.setMaxListeners(100)
  }

  static async create(deps: BackupDeps, options: BackupOptions): Promise<BackupService> {
    return new BackupService(deps, options)
  }

  // ---- repositories ----

  async listRepositories(): Promise<RepositoryView[]> {
    const [repos, jobs] = await Promise.all([this.repositories.list(), this.#jobs()])
    return repos.map((r) => this.#repoView(r, jobs))
  }

  #repoView(r: StoredRepository, jobs: StoredJob[]): RepositoryView {
    return {
      id: r.id,
      name: r.name,
      location: r.location,
      repository: repositoryName(r.location),
      createdAt: r.createdAt,
      jobs: jobs.filter((j) => j.repositoryId === r.id).length,
    }
  }

  async createRepository(input: RepositoryCreate, actor: AuditActor) {
    const target = repositoryName(input.location)
    try {
      const { stored, password, created } = await this.repositories.create(input)
      await this.#audit('backups.repository.create', stored.name, actor, 'success', {
        repository: target,
        mode: input.mode ?? 'create',
      })
      const view = this.#repoView(stored, await this.#jobs())
      return { repository: view, recoveryKit: created ? recoveryKit(view.repository, password) : null }
    } catch (err) {
      await this.#audit('backups.repository.create', input.name, actor, 'failure', {
        repository: target,
        ...errorInfo(err),
      })
      throw err
    }
  }

  async removeRepository(id: string, actor: AuditActor): Promise<{ removed: string }> {
    const jobs = await this.#jobs()
    const using = jobs.filter((j) => j.repositoryId === id)
    if (using.length) throw BackupErrors.inUse(`Jobs write to it: ${using.map((j) => j.name).join(', ')}`)
    const removed = await this.repositories.remove(id)
    await this.#audit('backups.repository.remove', removed.name, actor, 'success', {
      repository: repositoryName(removed.location),
      note: 'the repository itself is left where it is',
    })
    return { removed: removed.id }
  }

  // ---- jobs ----

  async #jobs(): Promise<StoredJob[]> {
    return (await this.#deps.settings.get<StoredJob[]>('jobs')) ?? []
  }

  #serialJobs<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.#jobsLock.then(fn, fn)
    this.#jobsLock = next.catch(() => undefined)
    return next
  }

  async #job(id: string): Promise<StoredJob> {
    const job = (await this.#jobs()).find((j) => j.id === id)
    if (!job) throw BackupErrors.notFound(`No job ${id}`)
    return job
  }

  async #state(id: string): Promise<JobState> {
    return (
      (await this.#deps.settings.get<JobState>(`state.${id}`)) ?? { lastResult: null, lastRunAt: null, lastCheck: null }
    )
  }

  async listJobs(): Promise<JobView[]> {
    return Promise.all((await this.#jobs()).map((j) => this.#jobView(j)))
  }

  async getJob(id: string): Promise<JobView> {
    return this.#jobView(await this.#job(id))
  }

  async #jobView(job: StoredJob): Promise<JobView> {
    const state = await this.#state(job.id)
    const running = this.#running.get(job.id)
    return {
      ...job,
      running: Boolean(running),
      progress: running?.progress ?? null,
      lastResult: state.lastResult,
      nextRun: nextRun(job, state)?.toISOString() ?? null,
      lastCheck: state.lastCheck,
    }
  }

  async createJob(input: JobCreate, actor: AuditActor): Promise<JobView> {
    await this.repositories.get(input.repositoryId)
    const job: StoredJob = {
      id: randomUUID(),
      name: input.name,
      repositoryId: input.repositoryId,
      containers: unique(input.containers ?? []),
      stopContainers: input.stopContainers ?? false,
      folders: unique((input.folders ?? []).map(checkedFolder)),
      intervalMinutes: input.intervalMinutes === undefined ? 60 : input.intervalMinutes,
      retention: input.retention ?? { ...DEFAULT_RETENTION },
      checkEveryDays: input.checkEveryDays === undefined ? 7 : input.checkEveryDays,
      createdAt: new Date().toISOString(),
    }
    await this.#serialJobs(async () => {
      const all = await this.#jobs()
      if (all.some((j) => j.name === job.name)) throw BackupErrors.exists(`A job is named ${job.name}`)
      await this.#deps.settings.set('jobs', [...all, job])
    })
    await this.#audit('backups.job.create', job.name, actor, 'success', describeJob(job))
    this.#schedule()
    return this.#jobView(job)
  }

  async updateJob(id: string, input: JobUpdate, actor: AuditActor): Promise<JobView> {
    const job = await this.#serialJobs(async () => {
      const all = await this.#jobs()
      const i = all.findIndex((j) => j.id === id)
      if (i < 0) throw BackupErrors.notFound(`No job ${id}`)
      if (input.name && all.some((j) => j.name === input.name && j.id !== id))
        throw BackupErrors.exists(`A job is named ${input.name}`)
      const next: StoredJob = {
        ...all[i]!,
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.containers !== undefined ? { containers: unique(input.containers) } : {}),
        ...(input.stopContainers !== undefined ? { stopContainers: input.stopContainers } : {}),
        ...(input.folders !== undefined ? { folders: unique(input.folders.map(checkedFolder)) } : {}),
        ...(input.intervalMinutes !== undefined ? { intervalMinutes: input.intervalMinutes } : {}),
        ...(input.retention !== undefined ? { retention: input.retention } : {}),
        ...(input.checkEveryDays !== undefined ? { checkEveryDays: input.checkEveryDays } : {}),
      }
      all[i] = next
      await this.#deps.settings.set('jobs', all)
      return next
    })
    await this.#audit('backups.job.update', job.name, actor, 'success', describeJob(job))
    this.#schedule()
    return this.#jobView(job)
  }

  async removeJob(id: string, actor: AuditActor): Promise<{ removed: string }> {
    if (this.#running.has(id)) throw BackupErrors.busy('The job is running: wait for it to end')
    const job = await this.#serialJobs(async () => {
      const all = await this.#jobs()
      const found = all.find((j) => j.id === id)
      if (!found) throw BackupErrors.notFound(`No job ${id}`)
      await this.#deps.settings.set(
        'jobs',
        all.filter((j) => j.id !== id),
      )
      return found
    })
    await this.#deps.settings.delete(`state.${id}`)
    await this.#audit('backups.job.remove', job.name, actor, 'success', { snapshots: 'kept in the repository' })
    this.#schedule()
    return { removed: id }
  }

  // ---- runs ----

  /** Starts a run (or joins the one in progress); `done` settles with its result, never rejects. */
  async run(id: string, actor: AuditActor): Promise<{ done: Promise<RunResult> }> {
    const job = await this.#job(id)
    const current = this.#running.get(id)
    if (current) return { done: current.done }
    const progress: Progress = {
      jobId: id,
      phase: 'prepare',
      percent: 0,
      filesDone: 0,
      totalFiles: 0,
      bytesDone: 0,
      totalBytes: 0,
      currentFile: '',
    }
    const done = this.#execute(job, progress, actor).finally(() => {
      this.#running.delete(id)
      this.#schedule()
    })
    this.#running.set(id, { progress, done })
    this.#emitProgress(progress)
    return { done }
  }

  #emitProgress(progress: Progress): void {
    this.events.emit('message', { type: 'progress', ...progress })
  }

  async #execute(job: StoredJob, progress: Progress, actor: AuditActor): Promise<RunResult> {
    const startedAt = new Date()
    const notes: string[] = []
    const result: RunResult = {
      status: 'failure',
      startedAt: startedAt.toISOString(),
      finishedAt: '',
      snapshotId: null,
      filesNew: 0,
      filesChanged: 0,
      bytesAdded: 0,
      bytesProcessed: 0,
      durationSeconds: 0,
      error: null,
      notes,
    }
    const phase = (name: string) => {
      progress.phase = name
      this.#emitProgress(progress)
    }
    try {
      const repo = await this.repositories.get(job.repositoryId)
      await this.#exclusive(repo.id, async () => {
        const open = await this.repositories.open(repo)
        try {
          const before = await this.#state(job.id)
          await this.#saveState(job.id, { inProgress: true })
          // The previous run was killed (restic, or the daemon): its lock may be left in the repository.
          if (before.inProgress || before.lastResult?.error?.code === BackupErrors.interrupted.code)
            await this.#removeStaleLocks(open, notes)
          await this.#backup(job, repo, open, progress, result, phase)
          result.status = 'success'
          const snapshots = (before.snapshots ?? 0) + 1
          await this.#saveState(job.id, { snapshots })
          // keep-last keeps the latest N whatever their age: with no more than N, forget would remove nothing.
          if (snapshots > job.retention.last) {
            phase('forget')
            await this.#forget(job, open, notes)
          }
          const state = await this.#state(job.id)
          if (job.checkEveryDays !== null && due(state.lastCheck, job.checkEveryDays * 86_400_000)) {
            phase('check')
            await this.#check(open, notes)
            await this.#saveState(job.id, { lastCheck: new Date().toISOString() })
          }
        } finally {
          await open.close()
        }
      })
    } catch (err) {
      result.status = 'failure'
      result.error = errorInfo(err)
      if (!(err instanceof HostdError)) this.#deps.log.error({ err, job: job.id }, 'backup run failed')
    }
    const finished = new Date()
    result.finishedAt = finished.toISOString()
    result.durationSeconds = (finished.getTime() - startedAt.getTime()) / 1000
    await this.#saveState(job.id, {
      lastResult: result,
      lastRunAt: result.startedAt,
      inProgress: false,
      // On the plugin's clock (the scheduler's: tests move it), which the alerts plugin's overdue rule compares with.
      ...(result.status === 'success' ? { lastSuccessAt: new Date(this.#now()).toISOString() } : {}),
    })
    phase('done')
    await this.#audit('backups.run', job.name, actor, result.status, {
      snapshot: result.snapshotId,
      ...(result.error ? { error: result.error.code, message: result.error.message } : {}),
      notes,
    })
    this.events.emit('message', { type: 'result', jobId: job.id, result })
    return result
  }

  async #saveState(id: string, patch: Partial<JobState>): Promise<void> {
    await this.#deps.settings.set(`state.${id}`, { ...(await this.#state(id)), ...patch })
  }

  /** Runs `fn` while no other restic writer of this plugin uses the repository. */
  async #exclusive<T>(repoId: string, fn: () => Promise<T>): Promise<T> {
    const before = this.#repoLocks.get(repoId) ?? Promise.resolve()
    const next = before.then(fn, fn)
    this.#repoLocks.set(
      repoId,
      next.catch(() => undefined),
    )
    return next
  }

  async #backup(
    job: StoredJob,
    repo: StoredRepository,
    open: OpenRepository,
    progress: Progress,
    result: RunResult,
    phase: (name: string) => void,
  ): Promise<void> {
    const staging = join(this.#dir, STAGING, job.id)
    await rm(staging, { recursive: true, force: true })
    await mkdir(join(staging, 'containers'), { recursive: true, mode: 0o700 })
    const stopped: string[] = []
    try {
      // A lock left by a killed run (its process gone) would stop forget and check: restic unlock removes only such.
      // hostd's database through SQLite's online backup API: a consistent copy while the daemon runs.
      await this.#databaseCopy(join(staging, 'hostd.sqlite'))
      // The staging folder is inside the data folder (at backups/staging/<job>), so it goes with it.
      const paths = [this.#deps.dataDir, ...job.folders]
      const tags = ['hostd', `job:${job.id}`]
      if (job.containers.length) {
        const containers = this.#deps.optional.get(containerBackupService)
        if (!containers)
          throw BackupErrors.containersUnavailable(
            'The job backs up containers, but the containers plugin is not running',
          )
        for (const name of job.containers) {
          const def = await containers.describe(name).catch((err) => {
            throw BackupErrors.sourceFailed(`Container ${name}: ${(err as Error).message}`)
          })
          await writeFile(join(staging, 'containers', `${def.name}.json`), JSON.stringify(def, null, 2), {
            mode: 0o600,
          })
          paths.push(...def.mounts.map((m) => m.source))
          tags.push(`container:${def.name}`)
        }
        if (job.stopContainers) {
          phase('stop')
          for (const name of job.containers) if (await containers.stop(name, SCHEDULER)) stopped.push(name)
          if (stopped.length) result.notes.push(`stopped for the copy: ${stopped.join(', ')}`)
        }
      }
      await writeFile(
        join(staging, 'job.json'),
        JSON.stringify({ job: job.id, name: job.name, dataDir: this.#deps.dataDir, at: result.startedAt }),
      )
      const excludes = [
        join(this.#deps.dataDir, 'hostd.sqlite'),
        join(this.#deps.dataDir, 'hostd.sqlite-wal'),
        join(this.#deps.dataDir, 'hostd.sqlite-shm'),
        join(this.#dir, 'run'),
        join(this.#dir, 'cache'),
        ...(repo.location.kind === 'local' ? [repo.location.path] : []),
      ]
      phase('backup')
      const args = [
        'backup',
        '--json',
        ...tags.flatMap((t) => ['--tag', t]),
        ...excludes.flatMap((e) => ['--exclude', e]),
        ...unique(paths),
      ]
      let summary: Record<string, unknown> | null = null
      const onJson = (m: Record<string, unknown>) => {
        if (m.message_type === 'status') {
          progress.percent = num(m.percent_done)
          progress.filesDone = num(m.files_done)
          progress.totalFiles = num(m.total_files)
          progress.bytesDone = num(m.bytes_done)
          progress.totalBytes = num(m.total_bytes)
          progress.currentFile = Array.isArray(m.current_files) ? String(m.current_files[0] ?? '') : ''
          this.#emitProgress(progress)
        } else if (m.message_type === 'summary') summary = m
      }
      const res =
        this.#rootHelper && repo.location.kind !== 'sftp'
          ? await this.#backupThroughHelper(open, { paths: unique(paths), excludes, tags }, onJson)
          : await runRestic(open.target, args, { signal: this.#abort.signal, keepStdout: false, onJson })
      // Exit 3: some files could not be read, the snapshot was still made.
      if ((res.code !== 0 && res.code !== 3) || !summary) throw classify(res, 'restic backup')
      const s = summary as Record<string, unknown>
      if (res.code === 3) result.notes.push('some files could not be read (see the log)')
      if (res.code === 3)
        this.#deps.log.warn({ job: job.id, stderr: res.stderr.slice(-2000) }, 'backup: unreadable files')
      result.snapshotId = String(s.snapshot_id ?? '') || null
      result.filesNew = num(s.files_new)
      result.filesChanged = num(s.files_changed)
      result.bytesAdded = num(s.data_added)
      result.bytesProcessed = num(s.total_bytes_processed)
      result.resticSeconds = num(s.total_duration)
      progress.percent = 1
    } finally {
      if (stopped.length) {
        phase('start')
        const containers = this.#deps.optional.get(containerBackupService)
        const failed: string[] = []
        for (const name of stopped)
          await containers?.start(name, SCHEDULER).catch((err) => {
            failed.push(name)
            this.#deps.log.error({ err, container: name }, 'backup: starting a container again failed')
          })
        result.notes.push(
          failed.length ? `could not start again: ${failed.join(', ')}` : `started again: ${stopped.join(', ')}`,
        )
      }
      await rm(staging, { recursive: true, force: true })
    }
  }

  /**
   * `restic backup` through the root helper (its `backups.restic-backup`: the same backup, run as the daemon's user
   * with the capability to read anything); its events are restic's output lines. The helper runs the job to its end
   * even when the daemon stops.
   */
  async #backupThroughHelper(
    open: OpenRepository,
    what: { paths: string[]; excludes: string[]; tags: string[] },
    onJson: (m: Record<string, unknown>) => void,
  ): Promise<Awaited<ReturnType<typeof runRestic>>> {
    const env = open.target.env
    let stderr = ''
    const answer = await this.#deps.helper.call<{ exitCode: number }>(
      'backups.restic-backup',
      {
        repository: open.target.repository,
        passwordFile: open.target.passwordFile,
        cacheDir: env.RESTIC_CACHE_DIR ?? join(this.#dir, 'cache'),
        ...what,
        ...(env.AWS_ACCESS_KEY_ID ? { awsAccessKeyId: env.AWS_ACCESS_KEY_ID } : {}),
        ...(env.AWS_SECRET_ACCESS_KEY ? { awsSecretAccessKey: env.AWS_SECRET_ACCESS_KEY } : {}),
        ...(env.AWS_DEFAULT_REGION ? { awsRegion: env.AWS_DEFAULT_REGION } : {}),
      },
      {
        timeoutMs: 86_400_000,
        onEvent: (e) => {
          const { stream, text } = e as { stream?: string; text?: string }
          if (typeof text !== 'string') return
          if (stream === 'stderr') stderr = (stderr + text + '\n').slice(-64 * 1024)
          else if (stream === 'stdout' && text.startsWith('{')) {
            try {
              onJson(JSON.parse(text) as Record<string, unknown>)
            } catch {
              // not a JSON line
            }
          }
        },
      },
    )
    return { code: answer.exitCode, signal: null, stdout: '', stderr }
  }

  /** restic unlock removes only stale locks (their process gone on this host, or older than 30 minutes). */
  async #removeStaleLocks(open: OpenRepository, notes: string[]): Promise<void> {
    const count = async () => {
      const res = await runRestic(open.target, ['list', 'locks', '--no-lock'], { timeoutMs: 120_000 })
      if (res.code !== 0) throw classify(res, 'restic list locks')
      return res.stdout.split('\n').filter((l) => /^[0-9a-f]{64}$/.test(l.trim())).length
    }
    const locks = await count()
    if (locks === 0) return
    const unlock = await runRestic(open.target, ['unlock'], { timeoutMs: 120_000 })
    if (unlock.code !== 0) throw classify(unlock, 'restic unlock')
    const removed = locks - (await count())
    if (removed > 0) notes.push(removed === 1 ? 'a stale lock was removed' : `${removed} stale locks were removed`)
  }

  async #databaseCopy(path: string): Promise<void> {
    const native = (await this.#deps.database.orm.em.getConnection().getNativeClient()) as {
      backup(destination: string): Promise<unknown>
    }
    try {
      await native.backup(path)
    } catch (err) {
      throw BackupErrors.sourceFailed(`hostd's database could not be copied: ${(err as Error).message}`)
    }
  }

  async #forget(job: StoredJob, open: OpenRepository, notes: string[]): Promise<void> {
    const r = job.retention
    const forget = () =>
      runRestic(
        open.target,
        [
          'forget',
          '--json',
          '--prune',
          '--tag',
          `job:${job.id}`,
          '--group-by',
          'host',
          '--keep-last',
          String(r.last),
          '--keep-hourly',
          String(r.hourly),
          '--keep-daily',
          String(r.daily),
          '--keep-weekly',
          String(r.weekly),
          '--keep-monthly',
          String(r.monthly),
        ],
        { timeoutMs: 60 * 60 * 1000 },
      )
    let res = await forget()
    if (res.code !== 0 && classify(res, '').code === BackupErrors.locked.code) {
      // A backup takes a shared lock, forget an exclusive one: a lock left by a killed run (its process gone, or
      // older than 30 minutes) stops it here. restic unlock removes only such stale locks; a live one stays.
      const unlock = await runRestic(open.target, ['unlock'], { timeoutMs: 120_000 })
      if (unlock.code === 0) {
        res = await forget()
        if (res.code === 0) notes.push('a stale lock was removed')
      }
    }
    if (res.code !== 0) {
      // The snapshot is made: a failed retention is a note, not a failed backup.
      notes.push(`retention failed: ${classify(res, 'restic forget').message}`)
      return
    }
    try {
      // The JSON is one line; prune's text report follows it.
      const json = res.stdout.split('\n').find((l) => l.startsWith('[')) ?? '[]'
      const groups = JSON.parse(json) as { keep: unknown[] | null; remove: unknown[] | null }[]
      const removed = groups.reduce((n, g) => n + (g.remove?.length ?? 0), 0)
      await this.#saveState(job.id, { snapshots: groups.reduce((n, g) => n + (g.keep?.length ?? 0), 0) })
      if (removed) notes.push(`retention removed ${removed} snapshot${removed === 1 ? '' : 's'}`)
    } catch {
      // restic printed prune's text after the JSON; nothing to count.
    }
  }

  async #check(open: OpenRepository, notes: string[]): Promise<void> {
    const res = await runRestic(open.target, ['check', '--read-data-subset=5%'], { timeoutMs: 6 * 60 * 60 * 1000 })
    if (res.code !== 0) notes.push(`check found a problem: ${classify(res, 'restic check').message}`)
    else notes.push('check of 5% of the data: no errors')
  }

  /** Each job's last success, for the `backups.status` service (read-only). */
  async status(): Promise<BackupJobStatus[]> {
    const out: BackupJobStatus[] = []
    for (const job of await this.#jobs()) {
      const state = await this.#state(job.id)
      const last = state.lastResult
      out.push({
        id: job.id,
        name: job.name,
        intervalMinutes: job.intervalMinutes,
        createdAt: job.createdAt,
        // A success recorded before lastSuccessAt was kept still counts.
        lastSuccessAt: state.lastSuccessAt ?? (last?.status === 'success' ? last.finishedAt : null),
        lastRunAt: last?.finishedAt ?? null,
        running: this.#running.has(job.id),
      })
    }
    return out
  }

  // ---- schedule ----

  start(): void {
    this.#stopped = false
    this.#abort = new AbortController()
    void this.repositories.sweep().catch(() => undefined)
    void rm(join(this.#dir, STAGING), { recursive: true, force: true }).catch(() => undefined)
    this.#schedule()
  }

  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    this.#abort.abort()
    await Promise.all([...this.#running.values()].map((r) => r.done))
  }

  /** One timer, to the earliest next run (at most an hour away, then looked at again). */
  #schedule(): void {
    if (this.#stopped) return
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    void (async () => {
      const jobs = await this.#jobs()
      let earliest = Number.POSITIVE_INFINITY
      for (const job of jobs) {
        if (this.#running.has(job.id)) continue
        const next = nextRun(job, await this.#state(job.id))
        if (next) earliest = Math.min(earliest, next.getTime())
      }
      if (this.#stopped || !Number.isFinite(earliest)) return
      const wait = Math.max(1000, Math.min(MAX_TIMER_MS, earliest - this.#now()))
      if (this.#timer) clearTimeout(this.#timer)
      this.#timer = setTimeout(() => void this.#runDue(), wait)
      this.#timer.unref()
    })().catch((err) => this.#deps.log.error({ err }, 'backups: scheduling failed'))
  }

  async #runDue(): Promise<void> {
    this.#timer = null
    const now = this.#now()
    for (const job of await this.#jobs()) {
      const next = nextRun(job, await this.#state(job.id))
      if (next && next.getTime() <= now && !this.#running.has(job.id)) await this.run(job.id, SCHEDULER)
    }
    this.#schedule()
  }

  // ---- snapshots and restore ----

  async #withRepo<T>(id: string, fn: (open: OpenRepository, repo: StoredRepository) => Promise<T>): Promise<T> {
    const repo = await this.repositories.get(id)
    const open = await this.repositories.open(repo)
    try {
      return await fn(open, repo)
    } finally {
      await open.close()
    }
  }

  async snapshots(repoId: string): Promise<Snapshot[]> {
    return this.#withRepo(repoId, async (open) => {
      const res = await runRestic(open.target, ['snapshots', '--json'], { timeoutMs: 120_000 })
      if (res.code !== 0) throw classify(res, 'restic snapshots')
      const raw = JSON.parse(res.stdout || '[]') as {
        id: string
        short_id: string
        time: string
        hostname: string
        paths: string[]
        tags?: string[] | null
      }[]
      return raw
        .map((s) => {
          const tags = s.tags ?? []
          return {
            id: s.id,
            shortId: s.short_id,
            time: s.time,
            hostname: s.hostname,
            paths: s.paths,
            tags,
            jobId: tags.find((t) => t.startsWith('job:'))?.slice(4) ?? null,
            containers: tags.filter((t) => t.startsWith('container:')).map((t) => t.slice(10)),
          }
        })
        .sort((a, b) => b.time.localeCompare(a.time))
    })
  }

  async files(repoId: string, snapshot: string, path = '/') {
    const dir = normalize(path)
    return this.#withRepo(repoId, async (open) => {
      const res = await runRestic(open.target, ['ls', '--json', snapshot, dir], { timeoutMs: 120_000 })
      if (res.code !== 0) throw this.#snapshotError(res, snapshot, 'restic ls')
      const items: { name: string; path: string; type: string; size: number; mtime: string }[] = []
      for (const line of res.stdout.split('\n')) {
        if (!line.startsWith('{')) continue
        const node = JSON.parse(line) as Record<string, unknown>
        if (node.struct_type !== 'node') continue
        const p = String(node.path)
        if (p === dir || dirname(p) !== dir) continue
        items.push({
          name: String(node.name),
          path: p,
          type: String(node.type),
          size: num(node.size),
          mtime: String(node.mtime ?? ''),
        })
      }
      items.sort((a, b) => (a.type === 'dir' ? 0 : 1) - (b.type === 'dir' ? 0 : 1) || a.name.localeCompare(b.name))
      return { path: dir, items }
    })
  }

  #snapshotError(res: Awaited<ReturnType<typeof runRestic>>, snapshot: string, what: string): HostdError {
    if (/no matching ID found|invalid id|no snapshot/i.test(res.stderr))
      return BackupErrors.notFound(`No snapshot ${snapshot} in this repository`)
    return classify(res, what)
  }

  /** Restores files or folders of a snapshot to their place or under a file root (confined). */
  async restore(repoId: string, snapshot: string, body: RestoreBody, actor: AuditActor) {
    const paths = body.paths.map((p) => normalize(p))
    const target = body.target === 'original' ? '/' : await this.#rootTarget(body.target.root, body.target.path ?? '')
    const detail = { snapshot, paths, target }
    try {
      await this.#exclusive(repoId, () =>
        this.#withRepo(repoId, async (open) => {
          if (target !== '/') await mkdir(target, { recursive: true })
          const res = await runRestic(
            open.target,
            ['restore', snapshot, '--target', target, ...paths.flatMap((p) => ['--include', p])],
            { timeoutMs: 24 * 60 * 60 * 1000 },
          )
          if (res.code !== 0) throw this.#snapshotError(res, snapshot, 'restic restore')
        }),
      )
    } catch (err) {
      await this.#audit('backups.restore', repoId, actor, 'failure', { ...detail, ...errorInfo(err) })
      throw err
    }
    await this.#audit('backups.restore', repoId, actor, 'success', detail)
    return { restored: paths, target }
  }

  async #rootTarget(rootName: string, sub: string): Promise<string> {
    const root = this.#roots.find((r) => r.name === rootName)
    if (!root) throw BackupErrors.pathRefused(`No file root named ${rootName}`)
    if (isAbsolute(sub) || sub.split('/').includes('..') || sub.includes('\0'))
      throw BackupErrors.pathRefused('The folder must be relative to the root, without ".."')
    await mkdir(root.path, { recursive: true })
    const base = await realpath(root.path)
    const wanted = join(base, sub)
    // The deepest existing part must resolve inside the root (a symbolic link cannot lead out).
    let existing = wanted
    for (;;) {
      const real = await realpath(existing).catch(() => null)
      if (real) {
        const rel = relative(base, real)
        if (rel.startsWith('..') || isAbsolute(rel)) throw BackupErrors.pathRefused('That folder leads out of the root')
        break
      }
      existing = dirname(existing)
    }
    return wanted
  }

  /** Restores a container: its volumes' data and bind folders, then the container itself from its definition. */
  async restoreContainer(repoId: string, snapshot: string, name: string, actor: AuditActor) {
    const containers = this.#deps.optional.get(containerBackupService)
    if (!containers) throw BackupErrors.containersUnavailable()
    const detail: Record<string, unknown> = { snapshot, repository: repoId }
    try {
      const out = await this.#exclusive(repoId, () =>
        this.#withRepo(repoId, async (open) => {
          // Refused before any data is written: a restore never lands under a container that exists.
          const exists = await containers.describe(name).then(
            () => true,
            () => false,
          )
          if (exists)
            throw BackupErrors.exists(`A container named ${name} exists: remove it first, or restore its files`)
          const def = await this.#definition(open, snapshot, name)
          const volumes: string[] = []
          const binds: string[] = []
          for (const mount of def.mounts) {
            if (mount.type === 'volume' && mount.name) {
              const { mountpoint } = await containers.ensureVolume(mount.name, actor)
              await this.#restoreInto(open, snapshot, mount.source, mountpoint)
              volumes.push(mount.name)
            } else if (mount.type === 'bind') {
              await this.#restoreInto(open, snapshot, mount.source, mount.source)
              binds.push(mount.source)
            }
          }
          const created = await containers.recreate(def, actor)
          if (def.running) await containers.start(created.id, actor)
          return { id: created.id, name: created.name, volumes, binds, started: def.running }
        }),
      )
      await this.#audit('backups.restore-container', name, actor, 'success', { ...detail, ...out })
      return out
    } catch (err) {
      await this.#audit('backups.restore-container', name, actor, 'failure', { ...detail, ...errorInfo(err) })
      throw err
    }
  }

  async #definition(open: OpenRepository, snapshot: string, name: string): Promise<ContainerDefinition> {
    const res = await runRestic(open.target, ['snapshots', '--json', snapshot], { timeoutMs: 120_000 })
    if (res.code !== 0) throw this.#snapshotError(res, snapshot, 'restic snapshots')
    const [snap] = JSON.parse(res.stdout || '[]') as { paths: string[]; tags?: string[] | null }[]
    if (!snap) throw BackupErrors.notFound(`No snapshot ${snapshot} in this repository`)
    if (!(snap.tags ?? []).includes(`container:${name}`))
      throw BackupErrors.notFound(`Snapshot ${snapshot} holds no container named ${name}`)
    const jobId = (snap.tags ?? []).find((t) => t.startsWith('job:'))?.slice(4) ?? ''
    // The definitions are in the staging folder, under the data folder the snapshot was made from (one of its paths).
    let dump: Awaited<ReturnType<typeof runRestic>> | null = null
    // This host's data folder first: the usual case, one restic call.
    const bases = [...snap.paths].sort((a, b) => Number(b === this.#deps.dataDir) - Number(a === this.#deps.dataDir))
    for (const base of bases) {
      const file = join(base, 'backups', STAGING, jobId, 'containers', `${name}.json`)
      dump = await runRestic(open.target, ['dump', snapshot, file], { timeoutMs: 120_000 })
      if (dump.code === 0) break
    }
    if (dump?.code !== 0) throw BackupErrors.notFound(`Snapshot ${snapshot} holds no definition of ${name}`)
    return JSON.parse(dump.stdout) as ContainerDefinition
  }

  /** Puts the snapshot's folder `source` at `dest`: in place when they are the same, else through a sibling folder. */
  async #restoreInto(open: OpenRepository, snapshot: string, source: string, dest: string): Promise<void> {
    if (normalize(source) === normalize(dest)) {
      const res = await runRestic(open.target, ['restore', snapshot, '--target', '/', '--include', source], {
        timeoutMs: 24 * 60 * 60 * 1000,
      })
      if (res.code !== 0) throw this.#snapshotError(res, snapshot, 'restic restore')
      return
    }
    const scratch = join(dirname(dest), `.hostd-restore-${randomBytes(4).toString('hex')}`)
    try {
      const res = await runRestic(open.target, ['restore', snapshot, '--target', scratch, '--include', source], {
        timeoutMs: 24 * 60 * 60 * 1000,
      })
      if (res.code !== 0) throw this.#snapshotError(res, snapshot, 'restic restore')
      const from = join(scratch, source)
      if (!(await stat(from).catch(() => null))) return
      await mkdir(dest, { recursive: true })
      for (const entry of await readdir(from)) {
        await rm(join(dest, entry), { recursive: true, force: true })
        await rename(join(from, entry), join(dest, entry))
      }
    } finally {
      await rm(scratch, { recursive: true, force: true })
    }
  }

  async containerChoices() {
    const containers = this.#deps.optional.get(containerBackupService)
    if (!containers) return { items: [], available: false }
    const items = await containers.list()
    return {
      items: items
        .map((c) => ({ name: c.name, image: c.image, state: c.state }))
        .sort((a, b) => a.name.localeCompare(b.name)),
      available: true,
    }
  }

  async #audit(
    action: string,
    target: string,
    actor: AuditActor,
    result: 'success' | 'failure',
    detail: Record<string, unknown>,
  ): Promise<void> {
    await this.#deps.audit.record({ action, target, result, detail }, actor)
  }
}

function recoveryKit(repository: string, password: string) {
  const text = [
    'hostd backup recovery kit',
    '',
    'Keep this file somewhere safe, away from the machine it backs up. Without the password the backups cannot',
    'be read by anyone, hostd included.',
    '',
    `Repository: ${repository}`,
    `Password:   ${password}`,
    '',
    'To read it with restic alone:',
    `  restic -r '${repository}' snapshots      (restic asks for the password)`,
    '',
  ].join('\n')
  return { repository, password, text }
}

function nextRun(job: StoredJob, state: JobState): Date | null {
  if (job.intervalMinutes === null) return null
  const from = new Date(state.lastRunAt ?? job.createdAt).getTime()
  return new Date(from + job.intervalMinutes * 60_000)
}

function due(last: string | null, everyMs: number): boolean {
  return !last || Date.now() - new Date(last).getTime() >= everyMs
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0
}

function unique<T>(items: T[]): T[] {
  return [...new Set(items)]
}

function checkedFolder(path: string): string {
  const clean = normalize(path)
  if (!isAbsolute(clean) || clean.includes('\0')) throw BackupErrors.invalid(`${path} is not an absolute path`)
  return clean.length > 1 ? clean.replace(/\/+$/, '') : clean
}

function describeJob(job: StoredJob): Record<string, unknown> {
  return {
    repository: job.repositoryId,
    containers: job.containers,
    stopContainers: job.stopContainers,
    folders: job.folders,
    intervalMinutes: job.intervalMinutes,
  }
}

export function errorInfo(err: unknown): { code: string; message: string } {
  if (err instanceof HostdError) return { code: err.code, message: err.message }
  return { code: 'HOSTD_BACKUPS_RESTIC_FAILED', message: (err as Error)?.message ?? String(err) }
}
