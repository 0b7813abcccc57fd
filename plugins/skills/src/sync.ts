import { randomUUID } from 'node:crypto'
import { lstat, mkdir, readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { watch, type FSWatcher } from 'chokidar'
import type { Logger } from '@hostd/sdk'
import { sha256 } from './blobs.ts'
import { checkManifest, normalizePath, SKILL_MD, pathKey } from './bundle.ts'
import { SkillErrors } from './errors.ts'
import { parseSkillMarkdown } from './frontmatter.ts'
import { LIMITS } from './limits.ts'
import type { SyncStatus } from './schemas.ts'
import type { SkillRow, SkillService } from './service.ts'

interface FolderFile {
  path: string
  full: string
  size: number
  mtimeMs: number
}

/**
 * Lists a synced skill folder without reading contents: regular files only (symbolic links, devices and
 * dot-entries are skipped, so nothing outside the folder is ever read), stopping as soon as a limit is passed.
 */
async function listFolder(root: string): Promise<FolderFile[]> {
  const out: FolderFile[] = []
  const walk = async (dir: string, rel: string, depth: number): Promise<void> => {
    for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (entry.name.startsWith('.')) continue
      const full = join(dir, entry.name)
      const path = rel ? `${rel}/${entry.name}` : entry.name
      if (entry.isDirectory()) {
        if (depth + 1 > LIMITS.depth) throw SkillErrors.tooDeep(`${path} lies deeper than ${LIMITS.depth} levels`)
        await walk(full, path, depth + 1)
      } else if (entry.isFile()) {
        const st = await lstat(full)
        out.push({ path, full, size: st.size, mtimeMs: st.mtimeMs })
        if (out.length > LIMITS.files) throw SkillErrors.tooManyFiles(`More than ${LIMITS.files} files`)
      }
    }
  }
  await walk(root, '', 0)
  return out
}

/**
 * The sync directory: each folder in it holding a SKILL.md is a skill with source `synced`: read-only through
 * the API, published as a new revision whenever its files change, removed when its folder goes, and its
 * enabled flag kept across updates. A folder that breaks a rule keeps its last good revision and is listed
 * with the reason in the sync status.
 */
export class SkillSync {
  readonly dir: string
  readonly #skills: SkillService
  readonly #log: Logger
  #watcher: FSWatcher | null = null
  #timer: NodeJS.Timeout | null = null
  #stopped = false
  readonly #errors = new Map<string, string>()
  /** Per folder: a fingerprint of names, sizes and times, so an unchanged folder is not read again. */
  readonly #prints = new Map<string, string>()

  constructor(skills: SkillService, dir: string, log: Logger) {
    this.#skills = skills
    this.dir = dir
    this.#log = log
  }

  async start(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 })
    await this.rescan()
    this.#watcher = watch(this.dir, { ignoreInitial: true, followSymlinks: false, depth: LIMITS.depth + 2 })
    this.#watcher.on('all', () => this.#schedule())
    this.#watcher.on('error', (err) => this.#log.warn({ err }, 'skills: sync directory watcher error'))
    await new Promise<void>((resolve) => this.#watcher!.once('ready', () => resolve()))
  }

  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#timer) clearTimeout(this.#timer)
    await this.#watcher?.close()
    this.#watcher = null
  }

  /** Changes are acted on 300 ms after the last event, so a copy in progress finishes first. */
  #schedule(): void {
    if (this.#stopped) return
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = setTimeout(() => {
      this.#timer = null
      this.rescan().catch((err: unknown) => this.#log.error({ err }, 'skills: sync rescan failed'))
    }, 300)
  }

  async status(): Promise<SyncStatus> {
    const rows = await this.#skills.syncedRows()
    return {
      dir: this.dir,
      watching: this.#watcher !== null,
      skills: rows.length,
      errors: [...this.#errors]
        .map(([folder, message]) => ({ folder, message }))
        .sort((a, b) => (a.folder < b.folder ? -1 : 1)),
    }
  }

  rescan(): Promise<SyncStatus> {
    return this.#skills.lock.run(async () => {
      const entries = await readdir(this.dir, { withFileTypes: true }).catch(() => [])
      const folders = entries.filter((e) => e.isDirectory() && !e.name.startsWith('.')).map((e) => e.name)
      const rows = new Map<string, SkillRow>()
      for (const row of await this.#skills.syncedRows()) if (row.syncFolder) rows.set(row.syncFolder, row)
      const present = new Set<string>()
      for (const folder of folders) {
        try {
          if (await this.#syncFolder(folder, rows.get(folder))) present.add(folder)
        } catch (err) {
          present.add(folder)
          const message = (err as Error).message
          if (this.#errors.get(folder) !== message)
            this.#log.warn({ folder, err: message }, 'skills: synced folder skipped')
          this.#errors.set(folder, message)
          this.#prints.delete(folder)
        }
      }
      for (const [folder, row] of rows) {
        if (present.has(folder)) continue
        await this.#skills.removeSyncedLocked(row)
        this.#prints.delete(folder)
        this.#errors.delete(folder)
        await this.#skills.audit(
          { action: 'skill.sync.remove', target: row.id, detail: { folder, name: row.name } },
          undefined,
        )
      }
      for (const folder of this.#errors.keys()) if (!folders.includes(folder)) this.#errors.delete(folder)
      const rowsNow = await this.#skills.syncedRows()
      return {
        dir: this.dir,
        watching: this.#watcher !== null,
        skills: rowsNow.length,
        errors: [...this.#errors]
          .map(([f, message]) => ({ folder: f, message }))
          .sort((a, b) => (a.folder < b.folder ? -1 : 1)),
      }
    })
  }

  /** Publishes one folder if it changed; false when it holds no SKILL.md (not a skill). Lock held. */
  async #syncFolder(folder: string, row: SkillRow | undefined): Promise<boolean> {
    const root = join(this.dir, folder)
    const listed = await listFolder(root)
    const skillMd = listed.find((f) => f.path === SKILL_MD)
    if (!skillMd) {
      if (listed.some((f) => pathKey(f.path) === pathKey(SKILL_MD)))
        throw SkillErrors.invalidPath(`Name the instructions file exactly ${SKILL_MD}`)
      return false
    }
    const print = sha256(JSON.stringify(listed.map((f) => [f.path, f.size, f.mtimeMs])))
    if (row && this.#prints.get(folder) === print) return true
    const others = listed.filter((f) => f !== skillMd).map((f) => ({ ...f, path: normalizePath(f.path) }))
    checkManifest(skillMd.size, others)
    const markdown = await readFile(skillMd.full, 'utf8')
    const doc = parseSkillMarkdown(markdown, undefined, folder)
    const files = []
    for (const f of others) {
      const data = await readFile(f.full)
      files.push({ path: f.path, size: data.length, data, sha256: undefined })
    }
    checkManifest(Buffer.byteLength(doc.markdown), files)
    const digest = this.#skills.digestFor(
      doc.markdown,
      files.map((f) => ({ path: f.path, size: f.size, sha256: sha256(f.data) })),
    )
    if (row && (await this.#skills.currentRevision(row)).digest === digest) {
      this.#prints.set(folder, print)
      this.#errors.delete(folder)
      return true
    }
    const skill = await this.#skills.publishLocked(
      row ? { skillId: row.id } : { skillId: randomUUID(), create: { source: 'synced', syncFolder: folder } },
      doc,
      files,
      'sync',
      undefined,
    )
    this.#prints.set(folder, print)
    this.#errors.delete(folder)
    await this.#skills.audit(
      {
        action: row ? 'skill.sync.update' : 'skill.sync.create',
        target: skill.id,
        detail: {
          folder,
          name: skill.name,
          revision: skill.revision,
          ...(row ? { before: { revision: row.revision } } : {}),
        },
      },
      undefined,
    )
    return true
  }
}
