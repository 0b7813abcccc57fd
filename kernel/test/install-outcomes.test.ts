/**
 * Issue 28's remaining kernel parts: a first install through the API of a plugin that declares permissions is held
 * until an admin approves it (a folder dropped in by hand is not: see docs/PLUGINS.md), each install, upgrade and
 * approval is one audit record naming its outcome, GET /api/extensions lists a plugin's routes and sockets, unknown
 * icon names are warnings, and in development mode (HOSTD_DEV=1) a plugin's module URLs follow its files.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { writePluginFolder } from '@hostd/sdk/testing'
import { scopedSettings } from '../src/db/settings.ts'
import { startTestKernel, type ExtensionEntry, type TestKernel } from '../src/testing.ts'

interface AuditItem {
  action: string
  target: string
  result: string
  username: string | null
  detail: Record<string, unknown> | null
}

/** Inside the repository: vitest serves a plugin's files from outside it (/@fs/...) differently. */
const SCRATCH = join(import.meta.dirname, '..', '..', '.hostd-test')
let work: string
let t: TestKernel

beforeAll(async () => {
  await mkdir(SCRATCH, { recursive: true })
  work = await mkdtemp(join(SCRATCH, 'outcomes-'))
  await mkdir(join(work, 'plugins'))
  t = await startTestKernel({
    env: { HOSTD_PLUGINS_DIR: join(work, 'plugins'), HOSTD_PLUGINS_ISOLATION: 'off', HOSTD_DEV: '1' },
  })
})
afterAll(async () => {
  await t?.close()
  await rm(work, { recursive: true, force: true })
})

/** A plugin's source: a route for each role, a socket, a page, and `extra` definition members. */
function source(id: string, version: string, extra = '', text = 'hello') {
  return `import { definePlugin, tokens } from '@hostd/sdk'
export default definePlugin({
  id: '${id}',
  version: '${version}',
  kernel: '^1.2.0',
  deps: { log: tokens.logger },${extra}
  ui: { pages: [{ path: '/${id}', title: '${id}', icon: 'server', module: 'ui/page.js', element: '${id}-page' }] },
  routes: (r) => {
    r.get('/api/${id}', { role: 'viewer' }, () => ({ version: '${version}', text: '${text}' }))
    r.post('/api/${id}/do', { role: 'operator' }, () => ({ done: true }))
    r.delete('/api/${id}/all', { role: 'admin', sessionOnly: true }, () => ({ deleted: true }))
  },
  sockets: (s) => {
    s.ws('/api/${id}/live', { role: 'viewer' }, (socket) => socket.close())
  },
})
`
}

/** A plugin folder in the scratch space (not the plugins dir): what `t.plugins.install` packs and uploads. */
async function folder(id: string, version: string, extra = '', text = 'hello'): Promise<string> {
  const dir = join(work, 'src', `${id}-${version}-${Math.random().toString(36).slice(2, 8)}`)
  return writePluginFolder(dir, {
    name: id,
    version,
    entry: 'src/index.js',
    files: {
      'src/index.js': source(id, version, extra, text),
      'ui/page.js': `customElements.define('${id}-page', class extends HTMLElement {})\n`,
    },
  })
}

const ASKS = "\n  permissions: { services: { 'hostd.containers': 'read' }, network: true },"

async function auditOf(id: string): Promise<AuditItem[]> {
  const res = await t.inject({ url: '/api/audit?limit=500', as: 'admin' })
  return (res.json() as { items: AuditItem[] }).items.filter((e) => e.target === id).reverse()
}

const actions = async (id: string) => (await auditOf(id)).map((e) => [e.action, e.result, e.detail?.outcome])

describe('a first install through the API that declares permissions', () => {
  it('is held until an admin approves it: not running, its permissions listed, one audit record', async () => {
    const entry = await t.plugins.install(await folder('asker', '1.0.0', ASKS), { approve: false })
    expect(entry).toMatchObject({
      id: 'asker',
      version: '1.0.0',
      state: 'unavailable',
      routes: null,
      ui: null, // its page is not offered before it runs
      approval: {
        version: '1.0.0',
        granted: null,
        asks: { services: { 'hostd.containers': 'read' }, helper: [], network: true, kernel: ['hostd.logger'] },
      },
    })
    expect(entry.reason).toBe(
      "version 1.0.0 awaits an admin's approval before it first runs: it asks for services hostd.containers (read); " +
        'network; kernel services hostd.logger',
    )
    expect((await t.inject({ url: '/api/asker', as: 'viewer' })).statusCode).toBe(404)
    expect(t.kernel.registry.networkGranted('asker')).toBe(false)
    // Kept across restarts: the kernel's settings say it awaits approval.
    expect(await scopedSettings(t.kernel.db, 'kernel.plugins').get('pending')).toEqual(['asker'])
    const records = await auditOf('asker')
    expect(records.map((e) => [e.action, e.result, e.username])).toEqual([['plugin.install', 'success', 'admin-1']])
    expect(records[0]!.detail).toMatchObject({
      version: '1.0.0',
      outcome: 'held for approval',
      asks: { network: true },
    })
  })

  it('runs once approved, granted what it declared, and the approval is one record with its outcome', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/api/extensions/asker/approve',
      as: 'admin',
      payload: { version: '1.0.0' },
    })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ state: 'active' })
    expect(res.json()).not.toHaveProperty('approval')
    expect((await t.inject({ url: '/api/asker', as: 'viewer' })).json()).toEqual({ version: '1.0.0', text: 'hello' })
    expect(t.kernel.registry.networkGranted('asker')).toBe(true)
    expect(await scopedSettings(t.kernel.db, 'kernel.plugins').get('pending')).toEqual([])
    expect(await actions('asker')).toEqual([
      ['plugin.install', 'success', 'held for approval'],
      ['plugin.approve', 'success', 'active'],
    ])
  })

  it('is approved by the harness by default (t.plugins.install), as the admin on the Plugins page would', async () => {
    const entry = await t.plugins.install(await folder('auto', '1.0.0', ASKS))
    expect(entry).toMatchObject({ state: 'active' })
    expect(entry).not.toHaveProperty('approval')
    expect((await actions('auto')).map(([action]) => action)).toEqual(['plugin.install', 'plugin.approve'])
  })

  it('is not held when it declares nothing to approve (only kernel services)', async () => {
    const entry = await t.plugins.install(await folder('modest', '1.0.0'), { approve: false })
    expect(entry).toMatchObject({ state: 'active' })
    expect(await actions('modest')).toEqual([['plugin.install', 'success', 'active']])
  })

  it('is not held when its folder is dropped into the plugins dir by hand: granted at load, audited by the registry', async () => {
    const dir = join(t.kernel.config.pluginsDir, 'dropped')
    await writePluginFolder(dir, {
      name: 'dropped',
      entry: 'src/index.js',
      files: {
        'src/index.js': source('dropped', '1.0.0', ASKS),
        'ui/page.js': "customElements.define('dropped-page', class extends HTMLElement {})\n",
      },
    })
    await t.kernel.registry.reconcile(dir, false)
    expect(await t.plugins.entry('dropped')).toMatchObject({ state: 'active', permissions: { network: true } })
    expect(await actions('dropped')).toEqual([['plugin.load', 'success', undefined]])
  })
})

describe('a held first install across a restart', () => {
  it('stays held: the daemon that starts next loads it held, not granted', async () => {
    const dataDir = join(work, 'restarted')
    const env = { HOSTD_DATA_DIR: dataDir, HOSTD_PLUGINS_DIR: join(dataDir, 'plugins'), HOSTD_PLUGINS_ISOLATION: 'off' }
    const first = await startTestKernel({ env })
    try {
      const held = await first.plugins.install(await folder('later', '1.0.0', ASKS), { approve: false })
      expect(held).toMatchObject({ state: 'unavailable', approval: { granted: null } })
    } finally {
      await first.close()
    }
    const second = await startTestKernel({ env })
    try {
      // Its users are the first kernel's (the same database): read the list as the registry answers it.
      const listed = (await second.kernel.registry.list('admin')).find((e) => e.id === 'later')
      expect(listed).toMatchObject({
        state: 'unavailable',
        approval: { version: '1.0.0', granted: null },
      })
      expect(second.kernel.registry.networkGranted('later')).toBe(false)
      expect((await second.inject({ url: '/api/later', as: 'viewer' })).statusCode).toBe(404)
    } finally {
      await second.close()
    }
  })
})

describe('one audit record per install or upgrade, naming its outcome', () => {
  it('an upgrade: plugin.upgrade with the version it replaced', async () => {
    await t.plugins.upgrade('modest', await folder('modest', '1.1.0'))
    expect((await auditOf('modest')).at(-1)).toMatchObject({
      action: 'plugin.upgrade',
      result: 'success',
      username: 'admin-1',
      detail: { version: '1.1.0', from: '1.0.0', outcome: 'active' },
    })
    expect((await auditOf('modest')).length).toBe(2)
  })

  it('a failed upgrade: one failure record with the error and where', async () => {
    const broken = await folder('modest', '1.2.0', "\n  start: () => { throw new Error('no start') },")
    expect(await t.plugins.upgrade('modest', broken)).toMatchObject({ state: 'failed', error: 'no start' })
    const records = await auditOf('modest')
    expect(records.length).toBe(3)
    expect(records.at(-1)).toMatchObject({
      action: 'plugin.upgrade',
      result: 'failure',
      detail: { version: '1.2.0', from: '1.1.0', outcome: 'failed', error: 'no start', origin: expect.any(String) },
    })
  })

  it('an upgrade asking for more: one record, held for approval, with what more', async () => {
    await t.plugins.upgrade('asker', await folder('asker', '2.0.0', "\n  permissions: { helper: ['packages.list'] },"))
    expect((await auditOf('asker')).at(-1)).toMatchObject({
      action: 'plugin.upgrade',
      result: 'success',
      detail: { version: '2.0.0', from: '1.0.0', outcome: 'held for approval', asks: { helper: ['packages.list'] } },
    })
    expect((await actions('asker')).length).toBe(3)
  })
})

describe('GET /api/extensions lists routes and sockets', () => {
  it('with their methods, roles and whether a session is needed; null while a plugin does not run', async () => {
    const entry = (await t.plugins.entry('auto')) as ExtensionEntry
    expect(entry.routes).toEqual([
      { method: 'GET', path: '/api/auto', role: 'viewer', sessionOnly: false },
      { method: 'POST', path: '/api/auto/do', role: 'operator', sessionOnly: false },
      { method: 'DELETE', path: '/api/auto/all', role: 'admin', sessionOnly: true },
    ])
    expect(entry.sockets).toEqual([{ path: '/api/auto/live', role: 'viewer', sessionOnly: false }])
    await t.kernel.registry.disable('auto')
    expect(await t.plugins.entry('auto')).toMatchObject({ state: 'disabled', routes: null, sockets: null })
    await t.kernel.registry.enable('auto')
  })
})

describe('an icon the UI kit does not have', () => {
  it('is a warning of its load, naming the bad name and the nearest real ones', async () => {
    const dir = await folder('iconic', '1.0.0')
    const index = join(dir, 'src', 'index.js')
    await writeFile(index, (await readFile(index, 'utf8')).replace("icon: 'server'", "icon: 'refresh-cw'"))
    const entry = await t.plugins.install(dir)
    expect(entry.state).toBe('active')
    expect(entry.warnings).toEqual([
      'page /iconic names the icon "refresh-cw", which the UI kit does not have: it shows a puzzle piece. The nearest ' +
        'are refresh, rotate-ccw, search (docs/PLUGINS.md, "Icons", lists them all)',
    ])
    expect((await t.plugins.entry('auto'))?.warnings).toBeUndefined()
  })
})

describe('development mode (HOSTD_DEV=1)', () => {
  it("puts the revision of a third-party plugin's files in its module URLs: an edit gives new URLs", async () => {
    const before = (await t.plugins.entry('auto'))!.ui!.pages[0]!.module
    expect(before).toMatch(/^\/plugins\/auto\/1\.0\.0\/page\.js\?rev=[0-9a-f]{12}$/)
    await writeFile(join(t.plugins.folder('auto'), 'ui', 'page.js'), '// edited\n')
    const after = (await t.plugins.reload('auto')).ui!.pages[0]!.module
    expect(after).toMatch(/^\/plugins\/auto\/1\.0\.0\/page\.js\?rev=[0-9a-f]{12}$/)
    expect(after).not.toBe(before)
  })
})
