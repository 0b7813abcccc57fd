/**
 * Reloads and upgrades that work (issue 28, items 1, 5, 9 and 10): an upgrade packed by `npm pack` (every file the
 * same modification time) whose files all keep their size still happens; a failed entry carries its package.json's
 * version and, for a syntax error, the file, line and column; each outcome is audited once; a version written
 * differently in package.json and definePlugin is a warning; a plugin with entities upgrades hot, under load, its
 * tables migrated and its rows kept, and a migration the database refuses leaves the old version serving.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { c as tar } from 'tar'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '@hostd/sdk/testing'
import { startTestKernel, type TestKernel } from '../src/testing.ts'

interface Listed {
  id: string
  version: string | null
  state: string
  error?: string
  errorOrigin?: string
  warnings?: string[]
}

interface AuditItem {
  action: string
  target: string
  result: string
  detail: Record<string, unknown> | null
}

/** What `npm pack` gives every file: 1985-10-26T08:15:00Z. */
const NPM_PACK_TIME = new Date('1985-10-26T08:15:00.000Z')

/** Where the plugin folders are written. */
const SCRATCH = join(import.meta.dirname, '..', '..', '.hostd-test')
let work: string
let pluginsDir: string
let t: TestKernel

beforeAll(async () => {
  // Inside the repository: vitest serves a plugin's TypeScript from outside it (/@fs/...) without type stripping.
  await mkdir(SCRATCH, { recursive: true })
  work = await mkdtemp(join(SCRATCH, 'upgrade-'))
  pluginsDir = join(work, 'plugins')
  await mkdir(pluginsDir)
  t = await startTestKernel({ env: { HOSTD_PLUGINS_DIR: pluginsDir, HOSTD_PLUGINS_ISOLATION: 'off' } })
})
afterAll(async () => {
  await t?.close()
  await rm(work, { recursive: true, force: true })
})

type Files = Record<string, string>

const pkg = (name: string, version: string) =>
  JSON.stringify({ name, version, type: 'module', main: 'src/index.ts' }, null, 2)

/** Writes a plugin folder (replacing what was there). */
async function writeFolder(dir: string, files: Files): Promise<void> {
  await rm(dir, { recursive: true, force: true })
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true })
    await writeFile(join(dir, path), text)
  }
}

/** The files packed as `npm pack` packs them: under `package/`, every one with the same modification time. */
async function pack(files: Files): Promise<Buffer> {
  const root = await mkdtemp(join(work, 'pack-'))
  await writeFolder(join(root, 'package'), files)
  const chunks: Buffer[] = []
  for await (const chunk of tar({ gzip: true, cwd: root, portable: true, mtime: NPM_PACK_TIME }, ['package']))
    chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

const install = (archive: Buffer) =>
  t.inject({
    method: 'POST',
    url: '/api/extensions/install',
    as: 'admin',
    headers: { 'content-type': 'application/gzip' },
    payload: archive,
  })

async function listed(id: string, kernel = t): Promise<Listed | undefined> {
  return ((await kernel.inject({ url: '/api/extensions', as: 'admin' })).json() as Listed[]).find((e) => e.id === id)
}

/** Audit records of plugin `target` written by the registry (no actor), oldest first. */
async function auditOf(target: string, kernel = t): Promise<AuditItem[]> {
  const items = (await kernel.kernel.services.audit.list('all', 500, 0)).items as unknown as AuditItem[]
  return items.filter((e) => e.target === target && e.action.startsWith('plugin.')).reverse()
}

/** A third-party plugin answering `GET /api/<id>` with its version and `word`. */
const answering = (id: string, version: string, word: string, extra = ''): Files => ({
  'package.json': pkg(id, version),
  'src/index.ts': `import { definePlugin } from '@hostd/sdk'

export default definePlugin({
  id: '${id}',
  version: '${version}',
  kernel: '^1.1.0',
  routes: (r) => r.get('/api/${id}', { role: 'viewer' }, () => ({ version: '${version}', word: '${word}' })),${extra}
})
`,
})

describe('an upgrade whose files all keep their size and modification time (item 10)', () => {
  it('runs the new version: files are compared by content', async () => {
    const v1 = answering('samesize', '1.0.0', 'one')
    const v2 = answering('samesize', '1.2.0', 'two')
    for (const path of Object.keys(v1)) expect(v2[path]!.length, path).toBe(v1[path]!.length)
    expect((await install(await pack(v1))).json()).toMatchObject({ id: 'samesize', version: '1.0.0', state: 'active' })
    expect((await t.inject({ url: '/api/samesize', as: 'viewer' })).json()).toEqual({ version: '1.0.0', word: 'one' })

    const res = await install(await pack(v2))
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject({ id: 'samesize', version: '1.2.0', state: 'active' })
    expect((await t.inject({ url: '/api/samesize', as: 'viewer' })).json()).toEqual({ version: '1.2.0', word: 'two' })
  })
})

// Syntax errors are located by Node's own parser: test/e2e/load-errors.test.ts runs them in a real daemon (under
// vitest a plugin's module is parsed by vite, whose errors are not Node's).
describe('a failed entry (item 5, item 10)', () => {
  it("carries its package.json's version, and the line of its stack for a throw at import", async () => {
    const dir = join(pluginsDir, 'throws-at-import')
    await writeFolder(dir, {
      'package.json': pkg('throws-at-import', '1.0.0'),
      'src/index.ts': "const value: string = 'x'\nthrow new Error('no ' + value)\n",
    })
    await t.kernel.registry.reconcile(dir, false)
    const entry = await listed('throws-at-import')
    expect(entry).toMatchObject({ version: '1.0.0', state: 'failed', error: 'could not load: no x' })
    expect(entry?.errorOrigin).toBe('src/index.ts:2')
  })
})

describe('one audit record per outcome (item 9)', () => {
  it('a first load whose start() throws is audited once, as a failed load', async () => {
    const dir = join(pluginsDir, 'start-throws')
    await writeFolder(dir, answering('start-throws', '1.0.0', 'x', "\n  start: () => { throw new Error('no start') },"))
    await t.kernel.registry.reconcile(dir, false)
    expect(await listed('start-throws')).toMatchObject({ state: 'failed', error: 'no start' })
    const records = await eventually(async () => {
      const written = await auditOf('start-throws')
      return written.length >= 1 && written
    })
    expect(records.map((e) => [e.action, e.result])).toEqual([['plugin.load', 'failure']])
  })

  it('a reload to a version that fails is audited once, as a failed upgrade from the running version', async () => {
    const dir = join(pluginsDir, 'reload-fails')
    await writeFolder(dir, answering('reload-fails', '1.0.0', 'x'))
    await t.kernel.registry.reconcile(dir, false)
    await writeFolder(dir, answering('reload-fails', '1.1.0', 'x', "\n  start: () => { throw new Error('no start') },"))
    await t.kernel.registry.reconcile(dir, false)
    await writeFolder(dir, {
      ...answering('reload-fails', '1.2.0', 'x'),
      'src/index.ts': "throw new Error('no import')\n",
    })
    await t.kernel.registry.reconcile(dir, false)
    // A failure's record is written as the plugin is failed, not awaited by reconcile: poll for it.
    const records = await eventually(async () => {
      const written = await auditOf('reload-fails')
      return written.length >= 3 && written
    })
    expect(records.map((e) => [e.action, e.result])).toEqual([
      ['plugin.load', 'success'],
      ['plugin.upgrade', 'failure'],
      ['plugin.upgrade', 'failure'],
    ])
    expect(records[1]!.detail).toMatchObject({ version: '1.1.0', from: '1.0.0', error: 'no start' })
    expect(records[2]!.detail).toMatchObject({ version: '1.2.0', from: '1.1.0', error: 'could not load: no import' })
  })
})

describe('a version written differently in package.json and definePlugin (item 8)', () => {
  it('loads, listed with the definition’s version and a warning that names both', async () => {
    const dir = join(pluginsDir, 'two-versions')
    await writeFolder(dir, { ...answering('two-versions', '1.0.0', 'x'), 'package.json': pkg('two-versions', '1.0.1') })
    await t.kernel.registry.reconcile(dir, false)
    const entry = await listed('two-versions')
    expect(entry).toMatchObject({ version: '1.0.0', state: 'active' })
    expect(entry?.warnings).toEqual([
      'package.json says version 1.0.1 but definePlugin says 1.0.0: 1.0.0 is the version listed, granted and audited. ' +
        'Write the same version in both',
    ])
  })
})

/** A built-in plugin with one entity, `UpgradeNote` (table upgrade_notes), and `columns` beside its id and text. */
function withEntities(version: string, columns: Record<string, string>): Files {
  const props = Object.entries(columns)
    .map(([name, type]) => `    ${name}: ${type},\n`)
    .join('')
  const extra = Object.keys(columns)
  return {
    'package.json': pkg('notes-up', version),
    'src/index.ts': `import { defineEntity, definePlugin, p, tokens, Type } from '@hostd/sdk'

const Note = defineEntity({
  name: 'UpgradeNote',
  tableName: 'upgrade_notes',
  properties: {
    id: p.integer().primary().autoincrement(),
    text: p.string(),
${props}  },
})

export default definePlugin({
  id: 'notes-up',
  version: '${version}',
  kernel: '^1.1.0',
  deps: { db: tokens.database },
  entities: [Note],
  routes: (r, { db }) => {
    r.get('/api/notes-up', { role: 'viewer' }, async () => {
      const notes = await db.em().find(Note, {}, { orderBy: { id: 'asc' } })
      return { version: '${version}', notes: notes.map((n) => ({ id: n.id, text: n.text })) }
    })
    r.post(
      '/api/notes-up',
      { role: 'admin', schema: { body: Type.Object({ text: Type.String() }) } },
      async (req) => {
        const em = db.em()
        em.create(Note, { text: req.body.text${extra.map((c) => `, ${c}: 'set by ${version}'`).join('')} })
        // A request that spans a wait (as one awaiting another service would): it may straddle the migration.
        await new Promise((resolve) => setTimeout(resolve, 3))
        await em.flush()
        return { version: '${version}' }
      },
    )
  },
})
`,
  }
}

/**
 * A built-in plugin's tables are in the kernel's database; a third-party plugin's in a database of its own in its data
 * folder, which its runner opens inside its sandbox: the same upgrades hold for both.
 */
const entityKinds = [
  { kind: 'built-in', builtin: true },
  { kind: 'third-party, isolated', builtin: false },
] as const

describe.each(entityKinds)('a plugin with entities (item 1), $kind', ({ builtin }) => {
  let dir: string
  let k: TestKernel
  beforeAll(async () => {
    dir = join(await mkdtemp(join(work, 'entities-')), 'notes-up')
    k = builtin ? t : await startTestKernel({ env: { HOSTD_PLUGINS_DIR: pluginsDir } })
  })
  afterAll(async () => {
    if (!builtin) await k?.close()
  })
  const get = async () => (await k.inject({ url: '/api/notes-up', as: 'viewer' })).json()
  const add = (text: string) =>
    k.inject({ method: 'POST', url: '/api/notes-up', as: 'admin', payload: { text } }).then((res) => res.statusCode)
  /** Its database: the kernel's, or its own file (read beside the plugin's process, which holds it open). */
  const query = <T>(sql: string): T[] => {
    if (builtin) return k.kernel.db.native.prepare(sql).all() as T[]
    const own = new Database(join(k.kernel.config.dataDir, 'plugin-data', 'notes-up', 'plugin.sqlite'), {
      readonly: true,
    })
    try {
      return own.prepare(sql).all() as T[]
    } finally {
      own.close()
    }
  }
  const columns = () => query<{ name: string }>('PRAGMA table_info(upgrade_notes)').map((c) => c.name)
  const reconcile = () => k.kernel.registry.reconcile(dir, builtin)

  it('upgrades 1.0.0 -> 1.1.0 (a column added) hot, under load: no failed request, the 1.0.0 rows kept', async () => {
    await writeFolder(dir, withEntities('1.0.0', {}))
    expect((await reconcile())?.state).toBe('active')
    for (const text of ['first', 'second', 'third']) expect(await add(text)).toBe(200)

    const statuses: number[] = []
    let loading = true
    const load = async (n: number) => {
      for (let i = 0; loading; i++) {
        const res =
          i % 2 ? await add(`load ${n}.${i}`) : (await k.inject({ url: '/api/notes-up', as: 'viewer' })).statusCode
        statuses.push(res)
      }
    }
    const clients = [0, 1, 2, 3].map(load)
    await eventually(() => statuses.length > 20)
    await writeFolder(dir, withEntities('1.1.0', { note: 'p.string().nullable()' }))
    const upgraded = await reconcile()
    expect(upgraded).toMatchObject({ state: 'active', reason: null })
    const during = statuses.length
    await eventually(() => statuses.length > during + 20)
    loading = false
    await Promise.all(clients)

    expect(statuses.filter((s) => s !== 200)).toEqual([])
    expect(columns()).toEqual(['id', 'text', 'note'])
    const after = await get()
    expect(after.version).toBe('1.1.0')
    expect(after.notes.slice(0, 3)).toEqual([
      { id: 1, text: 'first' },
      { id: 2, text: 'second' },
      { id: 3, text: 'third' },
    ])
    expect(await add('with a note')).toBe(200)
    const rows = query("SELECT text, note FROM upgrade_notes WHERE text = 'with a note'")
    expect(rows).toEqual([{ text: 'with a note', note: 'set by 1.1.0' }])
    // A third-party plugin's table is in its own file only, never in the kernel's database.
    const inKernel = k.kernel.db.native.prepare("SELECT name FROM sqlite_master WHERE name = 'upgrade_notes'").all()
    expect(inKernel).toHaveLength(builtin ? 1 : 0)
    const audited = (await auditOf('notes-up', k)).map((e) => [e.action, e.result])
    expect(audited).toEqual([
      ['plugin.load', 'success'],
      ['plugin.upgrade', 'success'],
    ])
  })

  it('reloads the same version hot (its entities are new objects): no duplicate tables', async () => {
    const files = withEntities('1.1.0', { note: 'p.string().nullable()' })
    await writeFolder(dir, { ...files, 'src/index.ts': `${files['src/index.ts']}// edited\n` })
    expect(await reconcile()).toMatchObject({ state: 'active', reason: null })
    expect((await get()).notes.length).toBeGreaterThan(3)
  })

  it('a migration the database refuses leaves the old version serving, with a warning and a failed upgrade audited', async () => {
    const before = (await get()).notes.length
    await writeFolder(dir, withEntities('1.2.0', { note: 'p.string().nullable()', required: 'p.string()' }))
    const failed = await reconcile()
    expect(failed).toMatchObject({ state: 'failed' })
    expect(failed?.reason).toMatch(/^its tables could not be migrated: .*NOT NULL/)
    const entry = await listed('notes-up', k)
    expect(entry).toMatchObject({ version: '1.1.0', state: 'active' })
    expect(entry?.warnings?.[0]).toMatch(
      /^version 1\.2\.0 failed to load: its tables could not be migrated: .*; version 1\.1\.0 keeps serving$/,
    )
    expect((await get()).version).toBe('1.1.0')
    expect(await add('still served')).toBe(200)
    expect((await get()).notes.length).toBe(before + 1)
    expect(columns()).toEqual(['id', 'text', 'note'])
    const last = (await auditOf('notes-up', k)).at(-1)!
    expect([last.action, last.result, last.detail?.version, last.detail?.from]).toEqual([
      'plugin.upgrade',
      'failure',
      '1.2.0',
      '1.1.0',
    ])

    // A fixed 1.2.0 (the column with a default) then upgrades: the warning goes with the old version.
    await writeFolder(
      dir,
      withEntities('1.2.0', { note: 'p.string().nullable()', required: "p.string().default('none')" }),
    )
    expect(await reconcile()).toMatchObject({ state: 'active' })
    expect(await listed('notes-up', k)).toMatchObject({ version: '1.2.0', state: 'active' })
    expect((await listed('notes-up', k))?.warnings).toBeUndefined()
    expect(columns()).toEqual(['id', 'text', 'note', 'required'])
  })
})
