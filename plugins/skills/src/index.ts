import { join, resolve } from 'node:path'
import { definePlugin, tokens } from '@hostd/sdk'
import { BlobStore } from './blobs.ts'
import { DraftService } from './drafts.ts'
import { skillEntities } from './entities.ts'
import { skillRoutes } from './routes.ts'
import { SkillService, type SkillHooks } from './service.ts'
import { SkillSync } from './sync.ts'

export interface SkillsPluginOptions {
  /** The synced skills folder; default HOSTD_SKILLS_SYNC_DIR, else `<data dir>/skills/sync`. */
  syncDir?: string
  /** Test seams (a crash between blob writes and commit, a clock); production passes none. */
  hooks?: SkillHooks
}

/** How often expired drafts are swept (they are refused as soon as they expire either way). */
const SWEEP_MS = 10 * 60_000

/**
 * The skills plugin: a local workflow library. Files live content-addressed under `<data dir>/skills/blobs`,
 * metadata and revisions in the daemon's SQLite database.
 */
export function createSkillsPlugin(options: SkillsPluginOptions = {}) {
  return definePlugin({
    id: 'skills',
    version: '1.0.0',
    kernel: '^1.1.0',
    description: 'Local workflow library (skills): bundles with revisions and drafts, a synced folder, zip export.',
    ui: {
      pages: [
        {
          path: '/skills',
          title: 'Skills',
          icon: 'sparkles',
          role: 'admin',
          module: 'ui/skills.tsx',
          element: 'skills-page',
        },
      ],
    },
    deps: { db: tokens.database, audit: tokens.audit, log: tokens.logger, kernel: tokens.kernel },
    entities: skillEntities,
    setup: ({ db, audit, log, kernel }) => {
      const root = join(kernel.dataDir, 'skills')
      const skills = new SkillService({ db, audit, log, blobs: new BlobStore(root), hooks: options.hooks })
      const syncDir = resolve(options.syncDir ?? (process.env.HOSTD_SKILLS_SYNC_DIR || join(root, 'sync')))
      // `sweeps` ends the draft sweeps that `start` schedules.
      return {
        skills,
        drafts: new DraftService(skills),
        sync: new SkillSync(skills, syncDir, log),
        sweeps: new AbortController(),
      }
    },
    routes: (r, _deps, { skills, drafts, sync }) => skillRoutes(r, skills, drafts, sync),
    start: async ({ log }, { skills, drafts, sync, sweeps }) => {
      await skills.start()
      await drafts.sweep()
      await sync.start()
      const sweeper = setInterval(
        () => void drafts.sweep().catch((err: unknown) => log.error({ err }, 'skills: draft sweep failed')),
        SWEEP_MS,
      )
      sweeper.unref()
      sweeps.signal.addEventListener('abort', () => clearInterval(sweeper))
    },
    stop: async (_deps, { sync, sweeps }) => {
      sweeps.abort()
      await sync.stop()
    },
  })
}

export default createSkillsPlugin()
