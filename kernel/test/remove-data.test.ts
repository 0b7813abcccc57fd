/**
 * What removing a plugin keeps, and deleting that too (issue 28): `POST /api/extensions/:id/remove` keeps the plugin's
 * data folder (<data dir>/plugin-data/<id>), its settings and its tables, and says so; with `{ "deleteData": true }`
 * (a person's session, recently signed in) it deletes them, confined to the plugin-data folder, and audits what went.
 */
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { c as tar } from 'tar'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestKernel, type TestKernel } from '../src/testing.ts'

/** Inside the repository: vitest serves a plugin's TypeScript from outside it without type stripping. */
const SCRATCH = join(import.meta.dirname, '..', '..', '.hostd-test')
let work: string
let t: TestKernel

beforeAll(async () => {
  await mkdir(SCRATCH, { recursive: true })
  work = await mkdtemp(join(SCRATCH, 'remove-data-'))
  await mkdir(join(work, 'plugins'))
  t = await startTestKernel({ env: { HOSTD_PLUGINS_DIR: join(work, 'plugins'), HOSTD_PLUGINS_ISOLATION: 'off' } })
})
afterAll(async () => {
  await t?.close()
  await rm(work, { recursive: true, force: true })
})

/** A plugin, with a table when `table` is given (only a built-in plugin may have one), and a setting written at start. */
const files = (id: string, table?: string): Record<string, string> => ({
  'package.json': JSON.stringify({ name: id, version: '1.0.0', type: 'module', main: 'src/index.ts' }),
  'src/index.ts': `import { defineEntity, definePlugin, p, tokens } from '@hostd/sdk'

${
  table
    ? `const Row = defineEntity({
  name: '${table}Row',
  tableName: '${table}',
  properties: { id: p.integer().primary().autoincrement(), text: p.string() },
})`
    : ''
}

export default definePlugin({
  id: '${id}',
  version: '1.0.0',
  kernel: '^1.1.0',
  deps: { settings: tokens.settings${table ? ', db: tokens.database' : ''} },
  ${table ? 'entities: [Row],' : ''}
  setup: () => ({}),
  start: async ({ settings${table ? ', db' : ''} }) => {
    await settings.set('greeting', 'hello')
    ${table ? "const em = db.em()\n    em.create(Row, { text: 'a row' })\n    await em.flush()" : ''}
  },
  routes: (r) => r.get('/api/${id}', { role: 'viewer' }, () => ({ ok: true })),
})
`,
})

async function writeFolder(dir: string, id: string, table?: string): Promise<void> {
  for (const [path, text] of Object.entries(files(id, table))) {
    await mkdir(dirname(join(dir, path)), { recursive: true })
    await writeFile(join(dir, path), text)
  }
}

async function install(id: string): Promise<void> {
  const root = await mkdtemp(join(work, 'pack-'))
  await writeFolder(join(root, 'package'), id)
  const chunks: Buffer[] = []
  for await (const chunk of tar({ gzip: true, cwd: root, portable: true }, ['package'])) chunks.push(chunk as Buffer)
  const res = await t.inject({
    method: 'POST',
    url: '/api/extensions/install',
    as: 'admin',
    headers: { 'content-type': 'application/gzip' },
    payload: Buffer.concat(chunks),
  })
  expect(res.json()).toMatchObject({ id, state: 'active' })
}

const dataFolder = (id: string) => join(t.kernel.config.dataDir, 'plugin-data', id)
const tableExists = (table: string) =>
  t.kernel.db.native.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined
const settingsOf = (id: string) =>
  t.kernel.db.native.prepare('SELECT key FROM settings WHERE scope = ?').all(`plugin.${id}`) as { key: string }[]
const remove = (id: string, payload?: object, as: Parameters<TestKernel['inject']>[0]['as'] = 'admin') =>
  t.inject({ method: 'POST', url: `/api/extensions/${id}/remove`, as, ...(payload === undefined ? {} : { payload }) })

async function lastAudit(target: string) {
  const items = (await t.kernel.services.audit.list('all', 50, 0)).items as unknown as {
    action: string
    target: string
    detail: Record<string, unknown> | null
  }[]
  return items.find((e) => e.target === target && e.action === 'plugin.remove')
}

/** A plugin installed, with something in its data folder. */
async function installWithData(id: string): Promise<void> {
  await install(id)
  await mkdir(dataFolder(id), { recursive: true })
  await writeFile(join(dataFolder(id), 'state.json'), '{}')
  expect(settingsOf(id)).toEqual([{ key: 'greeting' }])
}

describe('removing a plugin', () => {
  it('keeps its data by default and answers what it kept', async () => {
    await installWithData('keeper')
    const res = await remove('keeper', {})
    expect(res.statusCode).toBe(200)
    const kept = { dataFolder: dataFolder('keeper'), settings: ['greeting'], tables: [] }
    expect(res.json()).toEqual({ id: 'keeper', deleted: { dataFolder: null, settings: [], tables: [] }, kept })
    expect(existsSync(join(work, 'plugins', 'keeper'))).toBe(false)
    expect(await readFile(join(dataFolder('keeper'), 'state.json'), 'utf8')).toBe('{}')
    expect(settingsOf('keeper')).toEqual([{ key: 'greeting' }])
    expect((await lastAudit('keeper'))?.detail).toMatchObject({ deleteData: false, kept })
  })

  it('without a body answers 204 as before, keeping its data', async () => {
    await install('keeper')
    expect((await remove('keeper')).statusCode).toBe(204)
    expect(existsSync(dataFolder('keeper'))).toBe(true)
  })

  it('with deleteData deletes its data folder, settings and tables, audited; installing it again starts empty', async () => {
    await installWithData('wiper')
    const res = await remove('wiper', { deleteData: true })
    expect(res.statusCode).toBe(200)
    const deleted = { dataFolder: dataFolder('wiper'), settings: ['greeting'], tables: [] }
    expect(res.json()).toEqual({ id: 'wiper', deleted, kept: { dataFolder: null, settings: [], tables: [] } })
    expect(existsSync(dataFolder('wiper'))).toBe(false)
    expect(settingsOf('wiper')).toEqual([])
    expect((await lastAudit('wiper'))?.detail).toMatchObject({ deleteData: true, deleted })
    // Another plugin's data is left alone.
    expect(settingsOf('keeper')).toEqual([{ key: 'greeting' }])
    expect(existsSync(dataFolder('keeper'))).toBe(true)
  })

  it('unlinks a symbolic link in place of its data folder, never what it leads to', async () => {
    await install('linker')
    const outside = await mkdtemp(join(work, 'outside-'))
    await writeFile(join(outside, 'precious'), 'x')
    await mkdir(join(t.kernel.config.dataDir, 'plugin-data'), { recursive: true })
    await symlink(outside, dataFolder('linker'))
    expect((await remove('linker', { deleteData: true })).json().deleted.dataFolder).toBe(dataFolder('linker'))
    expect(existsSync(dataFolder('linker'))).toBe(false)
    expect(await readFile(join(outside, 'precious'), 'utf8')).toBe('x')
  })

  it('refuses bad input, API tokens and other roles, before removing anything', async () => {
    await install('guarded')
    for (const body of [{ deleteData: 'yes' }, { deleteData: true, more: 1 }, []]) {
      const res = await remove('guarded', body)
      expect(res.statusCode).toBe(400)
      expect(res.json().error).toBe('HOSTD_REQUEST_INVALID')
    }
    const admin = await t.login('admin')
    const { secret } = t.kernel.services.sessions.apiTokens.create(
      { id: admin.userId, role: 'admin' },
      { name: 'ci', role: 'admin', prefixes: null, expiresAt: null },
      null,
    )
    const byToken = await t.inject({
      method: 'POST',
      url: '/api/extensions/guarded/remove',
      headers: { authorization: `Bearer ${secret}` },
      payload: { deleteData: true },
    })
    expect(byToken.statusCode).toBe(403)
    expect(byToken.json().error).toBe('HOSTD_AUTH_SESSION_REQUIRED')
    expect((await remove('guarded', { deleteData: true }, 'operator')).statusCode).toBe(403)
    // A session whose password was given longer ago than the re-authentication window.
    const stale = await t.login('admin')
    t.kernel.db.native.prepare('UPDATE sessions SET auth_at = 1 WHERE user_id = ?').run(stale.userId)
    const notRecent = await remove('guarded', { deleteData: true }, stale)
    expect(notRecent.statusCode).toBe(403)
    expect(notRecent.json().error).toBe('HOSTD_AUTH_REAUTH_REQUIRED')
    expect(t.kernel.registry.find('guarded')?.state).toBe('active')
    expect(settingsOf('guarded')).toEqual([{ key: 'greeting' }])
  })

  it('drops the tables its entities declared (a built-in folder: third-party plugins may have none) and forgets them', async () => {
    const dir = join(await mkdtemp(join(work, 'builtin-')), 'tabled')
    await writeFolder(dir, 'tabled', 'tabled_rows')
    const record = await t.kernel.registry.reconcile(dir, true)
    expect(record).toMatchObject({ state: 'active', reason: null })
    const entities = record!.definition!.entities!
    expect(t.kernel.db.native.prepare('SELECT text FROM tabled_rows').all()).toEqual([{ text: 'a row' }])
    await rm(dir, { recursive: true })
    await t.kernel.registry.reconcile(dir, true)
    expect(await t.kernel.registry.storedData('tabled', entities, false)).toEqual({
      settings: ['greeting'],
      tables: ['tabled_rows'],
    })
    expect(tableExists('tabled_rows')).toBe(true)
    expect(await t.kernel.registry.storedData('tabled', entities, true)).toEqual({
      settings: ['greeting'],
      tables: ['tabled_rows'],
    })
    expect(tableExists('tabled_rows')).toBe(false)
    expect(settingsOf('tabled')).toEqual([])
    // The next schema update (another plugin bringing entities) does not make it again; loading it again does.
    const other = join(await mkdtemp(join(work, 'builtin-')), 'other')
    await writeFolder(other, 'other', 'other_rows')
    expect(await t.kernel.registry.reconcile(other, true)).toMatchObject({ state: 'active', reason: null })
    expect(tableExists('other_rows')).toBe(true)
    expect(tableExists('tabled_rows')).toBe(false)
    await writeFolder(dir, 'tabled', 'tabled_rows')
    expect(await t.kernel.registry.reconcile(dir, true)).toMatchObject({ state: 'active', reason: null })
    expect(t.kernel.db.native.prepare('SELECT text FROM tabled_rows').all()).toEqual([{ text: 'a row' }])
  })
})
