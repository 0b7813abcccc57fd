/**
 * Declared permissions and the kernel's own ground (issue 26, items 2 to 4), against the hostile fixtures in
 * test/fixtures/hostile-plugins: a third-party plugin (any plugin not shipped in plugins/) gets the kernel services
 * that are scoped to it and exactly the other services, helper actions and network it declares; it cannot provide a
 * service of the kernel or take another's name; its routes, sockets and pages lie under its own id; an upgrade that
 * asks for more waits for an admin; an admin may trust it to run in process; its pages always run isolated.
 */
import { existsSync } from 'node:fs'
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { c as tar } from 'tar'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { definePlugin, tokens } from '@hostd/sdk'
import hello from '../../examples/hello-plugin/src/index.ts'
import { scopedSettings } from '../src/db/settings.ts'
import { declaredPermissions, morePermissions } from '../src/plugins/permissions.ts'
import { startTestKernel, type TestKernel } from '../src/testing.ts'
import { FAKE_SIGN_IN } from '../../test/fixtures/hostile-plugins/route-squatter/src/index.ts'

const FIXTURES = join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'hostile-plugins')

interface Extension {
  id: string
  version: string | null
  state: string
  reason?: string
  error?: string
  builtin: boolean
  trusted: boolean
  permissions: { services: Record<string, string>; helper: string[]; network: boolean; kernel: string[] } | null
  approval?: { version: string; asks: Extension['permissions']; granted: string | null }
  ui: { isolate: boolean } | null
}

/** An audited kernel service used by a built-in plugin: where its records must land. */
const auditor = definePlugin({
  id: 'auditor',
  version: '1.0.0',
  kernel: '^1.1.0',
  deps: { audit: tokens.audit },
  routes: (r, { audit }) => {
    r.post('/api/auditor/note', { role: 'viewer' }, async (req) => {
      await audit.record({ action: 'auditor.note', target: 'secret-target' }, req)
    })
  },
})

describe('the permissions part of the manifest', () => {
  const base = { id: 'shape', version: '1.0.0', kernel: '^1.2.0' }
  it('is checked by definePlugin, so a bad one fails its own load with the reason', () => {
    const define = (permissions: unknown) => () => definePlugin({ ...base, permissions } as never)
    expect(define({ services: { 'hostd.containers': 'all' } })).toThrow(
      "plugin shape: permissions services: hostd.containers must be 'read' or 'write'",
    )
    expect(define({ helper: 'packages.install' })).toThrow('plugin shape: permissions helper must be a list')
    expect(define({ helper: ['rm -rf /'] })).toThrow('helper: "rm -rf /" is not a helper action name')
    expect(define({ network: 'yes' })).toThrow('plugin shape: permissions network must be true or false')
    expect(define({ files: ['/etc'] })).toThrow(
      'plugin shape: permissions has no "files" (only services, helper, network)',
    )
    expect(define({ services: { 'hostd.containers': 'read' }, helper: ['packages.list'], network: true })).not.toThrow()
  })

  it('counts as more: a new service, write over read, a new helper action, network, a new kernel service', () => {
    const declared = (permissions: object, deps = {}) =>
      declaredPermissions(definePlugin({ ...base, permissions, deps }))
    const v1 = declared({ services: { 'hostd.containers': 'write', 'a.b': 'read' }, helper: ['x.y'] })
    expect(morePermissions(declared({ services: { 'a.b': 'read' } }), v1)).toBeNull()
    expect(morePermissions(declared({ services: { 'a.b': 'write' } }), v1)).toEqual({
      services: { 'a.b': 'write' },
      helper: [],
      network: false,
      kernel: [],
    })
    expect(morePermissions(declared({ helper: ['x.y', 'x.z'], network: true }, { db: tokens.audit }), v1)).toEqual({
      services: {},
      helper: ['x.z'],
      network: true,
      kernel: ['hostd.audit'],
    })
  })
})

/**
 * A test kernel with the hello example and `auditor` built in, and a plugins folder for the fixtures. `isolation`:
 * `off` runs third-party plugins in the daemon's process (as a trusted one runs), `on` in their sandbox.
 */
function kernelWithPlugins(isolation: 'on' | 'off') {
  const k = {} as { t: TestKernel; work: string; pluginsDir: string }
  beforeAll(async () => {
    k.work = await mkdtemp(join(tmpdir(), 'hostd-permissions-'))
    k.pluginsDir = join(k.work, 'plugins')
    await mkdir(k.pluginsDir)
    k.t = await startTestKernel({
      plugins: [hello, auditor],
      env: { HOSTD_PLUGINS_DIR: k.pluginsDir, HOSTD_PLUGINS_ISOLATION: isolation },
    })
  })
  afterAll(async () => {
    await k.t?.close()
    await rm(k.work, { recursive: true, force: true })
  })
  const list = async () => (await k.t.inject({ url: '/api/extensions', as: 'admin' })).json() as Extension[]
  return {
    k,
    list,
    extension: async (id: string) => (await list()).find((e) => e.id === id),
    audit: async () =>
      (await k.t.inject({ url: '/api/audit?limit=200', as: 'admin' })).json() as {
        items: { action: string; target: string; result: string; detail: Record<string, unknown> | null }[]
      },
    /** Copies a fixture into the plugins folder with `entry` as its entry and loads it as the watcher would. */
    async drop(fixture: string, entry = 'src/index.ts', folder = fixture) {
      const dir = join(k.pluginsDir, folder)
      await rm(dir, { recursive: true, force: true })
      await cp(join(FIXTURES, fixture), dir, { recursive: true })
      const pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'))
      await writeFile(join(dir, 'package.json'), JSON.stringify({ ...pkg, hostd: { entry } }))
      const record = await k.t.kernel.registry.reconcile(dir, false)
      return { dir, record: record! }
    },
    async removeFolder(folder: string) {
      await rm(join(k.pluginsDir, folder), { recursive: true, force: true })
      await k.t.kernel.registry.reconcile(join(k.pluginsDir, folder), false)
    },
    /** The fixture packed as `npm pack` would, with `entry` as its entry. */
    async pack(fixture: string, entry: string): Promise<Buffer> {
      const root = await mkdtemp(join(k.work, 'pack-'))
      await cp(join(FIXTURES, fixture), join(root, 'package'), { recursive: true })
      const pkg = JSON.parse(await readFile(join(root, 'package', 'package.json'), 'utf8'))
      await writeFile(join(root, 'package', 'package.json'), JSON.stringify({ ...pkg, hostd: { entry } }))
      const chunks: Buffer[] = []
      for await (const chunk of tar({ gzip: true, cwd: root }, ['package'])) chunks.push(chunk as Buffer)
      return Buffer.concat(chunks)
    },
    /**
     * Uploads as the Plugins page does. A first install that declares permissions is held for approval (issue 28):
     * these tests are about what follows, so it is approved as an admin would, and the answer is the approved entry.
     */
    async install(archive: Buffer) {
      const res = await k.t.inject({
        method: 'POST',
        url: '/api/extensions/install',
        as: 'admin',
        headers: { 'content-type': 'application/gzip' },
        payload: archive,
      })
      const held = res.statusCode === 201 ? (res.json() as Extension).approval : undefined
      if (!held || held.granted !== null) return res
      const approved = await k.t.inject({
        method: 'POST',
        url: `/api/extensions/${(res.json() as Extension).id}/approve`,
        as: 'admin',
        payload: { version: held.version },
      })
      return Object.assign(approved, { statusCode: 201 })
    },
  }
}

// In the daemon's process (a trusted plugin, or isolation off): the kernel's checks are all that stand in the way.
describe('declared permissions and the kernel ground of third-party plugins, in process', () => {
  const { k, extension, audit, drop, removeFolder, pack, install } = kernelWithPlugins('off')
  // Read when each test runs: beforeAll sets them.
  let t: TestKernel
  let pluginsDir: string
  beforeAll(() => {
    t = k.t
    pluginsDir = k.pluginsDir
  })

  describe('token-hijack: the kernel services', () => {
    it('refuses a plugin that provides the audit service: the records stay with the kernel', async () => {
      const { record } = await drop('token-hijack')
      expect(record.state).toBe('failed')
      expect(record.reason).toBe('provides "hostd.audit", a service of the kernel: no plugin may provide it')
      expect((await t.inject({ method: 'POST', url: '/api/auditor/note', as: 'viewer' })).statusCode).toBe(204)
      const notes = (await audit()).items.filter((e) => e.action === 'auditor.note')
      expect(notes).toHaveLength(1)
      expect((await t.inject({ url: '/api/token-hijack/caught' })).statusCode).toBe(404)
    })

    it('never grants the kernel database: tokens.database is its own, where no hash is found', async () => {
      const { record } = await drop('token-hijack', 'src/database.ts')
      expect(record.state).toBe('active')
      const res = await t.inject({ url: '/api/token-hijack/hashes' })
      expect(res.statusCode).toBe(500)
      expect(res.body).not.toContain('argon2')
      expect(existsSync(join(t.kernel.config.dataDir, 'plugin-data', 'token-hijack', 'plugin.sqlite'))).toBe(true)
      // The next tests drop other versions of it: gone and forgotten, each is a first load again.
      await removeFolder('token-hijack')
      await t.kernel.registry.forget('token-hijack')
    })

    it('refuses the kernel database through tokens.optional too, at the call', async () => {
      const { record } = await drop('token-hijack', 'src/optional.ts')
      expect(record.state).toBe('active')
      const res = await t.inject({ url: '/api/token-hijack/hashes' })
      expect(res.statusCode).toBe(403)
      expect(res.json()).toEqual({
        error: 'HOSTD_PLUGIN_PERMISSION_DENIED',
        message: 'plugin token-hijack did not declare the service "hostd.database" in permissions.services',
      })
      expect(res.body).not.toContain('argon2')
    })

    it("refuses a plugin that provides a service under another plugin's name", async () => {
      const { record } = await drop('token-hijack', 'src/squat-service.ts')
      expect(record.state).toBe('failed')
      expect(record.reason).toBe(
        `provides "containers.volumes": a third-party plugin's services are named after it, token-hijack.<name>`,
      )
      await removeFolder('token-hijack')
    })

    it('refuses a service of another plugin that the manifest does not declare, and stamps audit records', async () => {
      const dir = join(pluginsDir, 'undeclared')
      await mkdir(join(dir, 'src'), { recursive: true })
      await writeFile(join(dir, 'package.json'), '{ "name": "undeclared", "type": "module", "main": "src/index.ts" }')
      const source = (declare: string) => `import { createServiceToken, definePlugin } from '@hostd/sdk'
export default definePlugin({ id: 'undeclared', version: '1.0.0', kernel: '^1.2.0', ${declare}
  deps: { volumes: createServiceToken('containers.volumes') } })\n`
      await writeFile(join(dir, 'src', 'index.ts'), source(''))
      const failed = await t.kernel.registry.reconcile(dir, false)
      expect(failed?.reason).toBe(
        'uses the service "containers.volumes" (deps.volumes) without declaring it: ' +
          "add permissions: { services: { 'containers.volumes': 'read' } } (or 'write')",
      )
      // Declared: granted. Nobody provides it here, so the plugin waits for its provider like any other.
      await writeFile(
        join(dir, 'src', 'index.ts'),
        source("permissions: { services: { 'containers.volumes': 'read' } },"),
      )
      const declared = await t.kernel.registry.reconcile(dir, false)
      expect(declared?.reason).toBe(
        'needs service "containers.volumes", which neither the kernel nor an active plugin provides',
      )
      await removeFolder('undeclared')
    })

    it("keeps its entities in a database of its own: a table it names users is not the kernel's", async () => {
      const dir = join(pluginsDir, 'tables')
      await mkdir(join(dir, 'src'), { recursive: true })
      await writeFile(join(dir, 'package.json'), '{ "name": "tables", "type": "module", "main": "src/index.ts" }')
      await writeFile(
        join(dir, 'src', 'index.ts'),
        `import { defineEntity, definePlugin, p, tokens } from '@hostd/sdk'
const Users = defineEntity({ name: 'Shadow', tableName: 'users', properties: { id: p.string().primary() } })
export default definePlugin({ id: 'tables', version: '1.0.0', kernel: '^1.3.0', entities: [Users],
  deps: { db: tokens.database },
  routes: (r, { db }) => r.get('/api/tables/count', { role: 'public' }, async () => ({ count: await db.em().count(Users) })) })\n`,
      )
      expect((await t.kernel.registry.reconcile(dir, false))?.state).toBe('active')
      expect((await t.inject({ url: '/api/tables/count' })).json()).toEqual({ count: 0 })
      const kernelUsers = t.kernel.db.native.prepare('SELECT count(*) AS n FROM users').get() as { n: number }
      expect(kernelUsers.n).toBeGreaterThan(0)
      await removeFolder('tables')
    })

    it('stamps the audit records of a third-party plugin with its id, whatever it writes there', async () => {
      const dir = join(pluginsDir, 'stamper')
      await mkdir(join(dir, 'src'), { recursive: true })
      await writeFile(join(dir, 'package.json'), '{ "name": "stamper", "type": "module", "main": "src/index.ts" }')
      await writeFile(
        join(dir, 'src', 'index.ts'),
        `import { definePlugin, tokens } from '@hostd/sdk'
export default definePlugin({ id: 'stamper', version: '1.0.0', kernel: '^1.2.0', deps: { audit: tokens.audit },
  routes: (r, { audit }) => r.post('/api/stamper/note', { role: 'viewer' }, (req) =>
    audit.record({ action: 'stamper.note', detail: { plugin: 'auditor', size: 1 } }, req)) })\n`,
      )
      expect((await t.kernel.registry.reconcile(dir, false))?.state).toBe('active')
      expect((await t.inject({ method: 'POST', url: '/api/stamper/note', as: 'viewer' })).statusCode).toBe(204)
      expect((await audit()).items.find((e) => e.action === 'stamper.note')?.detail).toEqual({
        plugin: 'stamper',
        size: 1,
      })
      await removeFolder('stamper')
    })
  })

  describe("route-squatter: the kernel's and other plugins' paths", () => {
    const refused = async (entry: string) => {
      const { record } = await drop('route-squatter', entry)
      expect(record.state, entry).toBe('failed')
      return record.reason
    }

    it("refuses GET /*: / and /sign-in stay the shell's", async () => {
      expect(await refused('src/index.ts')).toBe(
        "route GET /* is refused: a third-party plugin's routes and sockets lie under its own prefix, /api/route-squatter",
      )
      for (const path of ['/', '/sign-in', '/api/route-squatter/take']) {
        const res = await t.inject({ url: path })
        expect(res.body, path).not.toContain(FAKE_SIGN_IN)
      }
      expect((await t.inject({ method: 'POST', url: '/api/route-squatter/take' })).statusCode).toBe(404)
    })

    it("refuses the kernel's sign-in paths, a prefix of the kernel, another plugin's prefix and a climb out", async () => {
      expect(await refused('src/auth.ts')).toMatch(/^route POST \/api\/auth\/password is refused: /)
      expect(await refused('src/neighbour.ts')).toMatch(/^route GET \/api\/hello\/admin is refused: /)
      expect(await refused('src/dot-segments.ts')).toMatch(
        /^route POST \/api\/route-squatter\/\.\.\/auth\/login is refused/,
      )
      expect(await refused('src/socket.ts')).toBe(
        "socket /api/terminal is refused: a third-party plugin's routes and sockets lie under its own prefix, /api/route-squatter",
      )
      await removeFolder('route-squatter')
      const { record } = await drop('route-squatter', 'src/kernel-id.ts', 'auth')
      expect(record.reason).toMatch(
        /^its prefix \/api\/auth is the kernel's \((GET|POST) \/api\/auth\/[a-z/]+\): the plugin needs another id$/,
      )
      expect((await t.inject({ method: 'POST', url: '/api/auth/sso', payload: {} })).statusCode).toBe(404)
      await removeFolder('auth')
    })

    it("refuses pages outside /<id> and the shell's own pages", async () => {
      expect(await refused('src/page.ts')).toBe(
        "UI page /account-security is refused: a third-party plugin's pages lie under /route-squatter",
      )
      expect(await refused('src/shell-page.ts')).toMatch(/ui page "Sign in": path \/sign-in belongs to the shell$/)
      await removeFolder('route-squatter')
    })

    it('leaves built-in plugins their interface paths', async () => {
      expect((await extension('hello'))?.state).toBe('active')
      expect((await t.inject({ url: '/api/hello', as: 'viewer' })).statusCode).toBe(200)
    })
  })

  describe('greedy-upgrade: permissions shown, more asked means approval', () => {
    it('lists the permissions at install and forces its pages isolated', async () => {
      const res = await install(await pack('greedy-upgrade', 'src/index.ts'))
      expect(res.statusCode).toBe(201)
      expect(res.json()).toMatchObject({
        id: 'greedy-upgrade',
        version: '1.0.0',
        state: 'active',
        builtin: false,
        trusted: false,
        permissions: { services: { 'hostd.containers': 'read' }, helper: [], network: false, kernel: ['hostd.logger'] },
        ui: { isolate: true },
      })
      expect(res.json()).not.toHaveProperty('approval')
      // A built-in plugin keeps what its manifest says.
      expect((await extension('hello'))?.ui?.isolate).toBe(false)
      expect((await extension('hello'))?.trusted).toBe(false)
    })

    it('activates an upgrade that asks for no more at once', async () => {
      const res = await install(await pack('greedy-upgrade', 'src/v1-1.ts'))
      expect(res.json()).toMatchObject({ version: '1.1.0', state: 'active' })
      expect(res.json()).not.toHaveProperty('approval')
    })

    it('holds an upgrade that asks for more: the installed version keeps serving and the answer says what more', async () => {
      const res = await install(await pack('greedy-upgrade', 'src/v2.ts'))
      expect(res.statusCode).toBe(201)
      const asks = {
        services: { 'containers.volumes': 'read', 'hostd.containers': 'write' },
        helper: ['packages.install'],
        network: true,
        kernel: ['hostd.helper'],
      }
      expect(res.json()).toMatchObject({ version: '1.1.0', state: 'active', approval: { version: '2.0.0', asks } })
      expect((await t.inject({ url: '/api/greedy-upgrade/version', as: 'viewer' })).json()).toEqual({
        version: '1.1.0',
      })
      expect((await t.inject({ method: 'POST', url: '/api/greedy-upgrade/install', as: 'admin' })).statusCode).toBe(404)
      expect(t.kernel.registry.networkGranted('greedy-upgrade')).toBe(false)
      const records = (await audit()).items.filter((e) => e.target === 'greedy-upgrade')
      // One record for the upload (issue 28): the upgrade, held for approval, with what more it asks (newest first).
      expect(records.filter((e) => e.action === 'plugin.hold')).toEqual([])
      expect(records.find((e) => e.action === 'plugin.upgrade')?.detail).toMatchObject({
        version: '2.0.0',
        from: '1.1.0',
        outcome: 'held for approval',
        asks,
      })
    })

    it('approves only as an admin, with a recent sign-in, for the version listed', async () => {
      const approve = (version: string, as: 'admin' | 'operator' = 'admin') =>
        t.inject({ method: 'POST', url: '/api/extensions/greedy-upgrade/approve', as, payload: { version } })
      expect((await approve('2.0.0', 'operator')).statusCode).toBe(403)
      const stale = await approve('9.9.9')
      expect(stale.statusCode).toBe(409)
      expect(stale.json().error).toBe('HOSTD_PLUGIN_APPROVAL_STALE')
      const route = t.kernel.registry.routeTable().find((r) => r.path === '/api/extensions/:id/approve')
      expect(route).toMatchObject({ role: 'admin', sessionOnly: true, recentSignIn: true })

      const res = await approve('2.0.0')
      expect(res.statusCode).toBe(200)
      expect(res.json()).toMatchObject({ version: '2.0.0', state: 'active', permissions: { network: true } })
      expect(res.json()).not.toHaveProperty('approval')
      expect((await t.inject({ url: '/api/greedy-upgrade/version', as: 'viewer' })).json()).toEqual({
        version: '2.0.0',
      })
      expect(t.kernel.registry.networkGranted('greedy-upgrade')).toBe(true)
      expect((await audit()).items.find((e) => e.action === 'plugin.approve')).toMatchObject({
        target: 'greedy-upgrade',
        detail: { version: '2.0.0', granted: { network: true, helper: ['packages.install'] } },
      })
      const again = await approve('2.0.0')
      expect(again.statusCode).toBe(409)
      expect(again.json().error).toBe('HOSTD_PLUGIN_NO_APPROVAL_PENDING')
    })

    it('gives the approved version a helper client limited to the actions it declared', async () => {
      const declared = await t.inject({ method: 'POST', url: '/api/greedy-upgrade/install', as: 'admin' })
      expect(declared.json().error).toBe('HOSTD_HELPER_UNAVAILABLE') // declared: asked of the (absent) helper
      const undeclared = await t.inject({ method: 'POST', url: '/api/greedy-upgrade/reboot', as: 'admin' })
      expect(undeclared.statusCode).toBe(403)
      expect(undeclared.json()).toEqual({
        error: 'HOSTD_PLUGIN_PERMISSION_DENIED',
        message: 'plugin greedy-upgrade did not declare the helper action "system.reboot" in permissions.helper',
      })
    })

    it('holds a version asking for more that is found on disk with nothing running; enabling it does not approve it', async () => {
      // Back to version 1's grant: remove (forgets the grant), install version 1, then disable it.
      expect(
        (await t.inject({ method: 'POST', url: '/api/extensions/greedy-upgrade/remove', as: 'admin' })).statusCode,
      ).toBe(204)
      await install(await pack('greedy-upgrade', 'src/index.ts'))
      await t.kernel.registry.disable('greedy-upgrade')
      const { record } = await drop('greedy-upgrade', 'src/v2.ts')
      expect(record.definition?.version).toBe('2.0.0')
      const enable = await t.inject({ method: 'POST', url: '/api/extensions/greedy-upgrade/enable', as: 'admin' })
      expect(enable.json()).toMatchObject({ version: '2.0.0', state: 'unavailable', approval: { version: '2.0.0' } })
      expect(enable.json().reason).toBe(
        "version 2.0.0 awaits an admin's approval: it asks for more than version 1.0.0 was granted (services " +
          'containers.volumes (read), hostd.containers (write); helper actions packages.install; network; ' +
          'kernel services hostd.helper)',
      )
      expect((await t.inject({ url: '/api/greedy-upgrade/version', as: 'viewer' })).statusCode).toBe(404)
      const approved = await t.inject({
        method: 'POST',
        url: '/api/extensions/greedy-upgrade/approve',
        as: 'admin',
        payload: { version: '2.0.0' },
      })
      expect(approved.json()).toMatchObject({ version: '2.0.0', state: 'active' })
    })
  })

  describe('trusted to run in process', () => {
    const trust = (id: string, trusted: boolean) =>
      t.inject({ method: 'POST', url: `/api/extensions/${id}/trust`, as: 'admin', payload: { trusted } })

    it('is an explicit, audited admin choice, shown in GET /api/extensions and kept in the kernel settings', async () => {
      expect(t.kernel.registry.isTrusted('greedy-upgrade')).toBe(false)
      const res = await trust('greedy-upgrade', true)
      expect(res.statusCode).toBe(200)
      expect(res.json()).toMatchObject({ id: 'greedy-upgrade', trusted: true, state: 'active' })
      expect((await extension('greedy-upgrade'))?.trusted).toBe(true)
      expect(t.kernel.registry.isTrusted('greedy-upgrade')).toBe(true)
      expect(await scopedSettings(t.kernel.db, 'kernel.plugins').get('trusted')).toEqual(['greedy-upgrade'])
      expect((await audit()).items.find((e) => e.action === 'plugin.trust')).toMatchObject({
        target: 'greedy-upgrade',
        result: 'success',
        detail: { trusted: true },
      })
      const route = t.kernel.registry.routeTable().find((r) => r.path === '/api/extensions/:id/trust')
      expect(route).toMatchObject({ role: 'admin', sessionOnly: true, recentSignIn: true })
    })

    it('is refused for a built-in plugin and an unknown one', async () => {
      const builtin = await trust('hello', true)
      expect(builtin.statusCode).toBe(409)
      expect(builtin.json().error).toBe('HOSTD_PLUGIN_BUILTIN')
      expect((await trust('nobody', true)).statusCode).toBe(404)
      expect(
        (
          await t.inject({
            method: 'POST',
            url: '/api/extensions/hello/trust',
            as: 'operator',
            payload: { trusted: true },
          })
        ).statusCode,
      ).toBe(403)
    })

    it('goes with the plugin when it is removed', async () => {
      expect(
        (await t.inject({ method: 'POST', url: '/api/extensions/greedy-upgrade/remove', as: 'admin' })).statusCode,
      ).toBe(204)
      expect(t.kernel.registry.isTrusted('greedy-upgrade')).toBe(false)
      expect(await scopedSettings(t.kernel.db, 'kernel.plugins').get('trusted')).toEqual([])
    })
  })
})

// In its sandbox (the default for a third-party plugin): the same fixtures do no better.
describe('declared permissions and the kernel ground of third-party plugins, isolated', () => {
  const { k, extension, audit, drop, pack, install } = kernelWithPlugins('on')

  it('token-hijack: providing the audit service fails the load, the database it takes is its own; records stay', async () => {
    for (const entry of ['src/index.ts', 'src/squat-service.ts']) {
      const { record } = await drop('token-hijack', entry)
      expect(record.state, entry).toBe('failed')
      expect(record.reason, entry).toMatch(/hostd\.audit|provides|containers\.volumes/)
    }
    const { record } = await drop('token-hijack', 'src/database.ts')
    expect(record.state, record.reason ?? '').toBe('active')
    const hashes = await k.t.inject({ url: '/api/token-hijack/hashes' })
    expect(hashes.statusCode).toBe(500)
    expect(hashes.body).not.toContain('argon2')
    await drop('token-hijack', 'src/index.ts')
    expect((await k.t.inject({ method: 'POST', url: '/api/auditor/note', as: 'viewer' })).statusCode).toBe(204)
    expect((await audit()).items.filter((e) => e.action === 'auditor.note')).toHaveLength(1)
    for (const path of ['/api/token-hijack/caught', '/api/token-hijack/hashes'])
      expect((await k.t.inject({ url: path })).statusCode, path).toBe(404)
  })

  it("route-squatter: the kernel's and other plugins' paths are refused with the same reasons", async () => {
    const reason = async (entry: string, folder?: string) => {
      const { record } = await drop('route-squatter', entry, folder)
      expect(record.state, entry).toBe('failed')
      return record.reason
    }
    expect(await reason('src/index.ts')).toBe(
      "route GET /* is refused: a third-party plugin's routes and sockets lie under its own prefix, /api/route-squatter",
    )
    for (const path of ['/', '/sign-in']) expect((await k.t.inject({ url: path })).body).not.toContain(FAKE_SIGN_IN)
    expect(await reason('src/auth.ts')).toMatch(/^route POST \/api\/auth\/password is refused: /)
    expect(await reason('src/neighbour.ts')).toMatch(/^route GET \/api\/hello\/admin is refused: /)
    expect(await reason('src/page.ts')).toMatch(/^UI page \/account-security is refused: /)
  })

  it('greedy-upgrade: lists its permissions at install and its pages run isolated', async () => {
    const res = await install(await pack('greedy-upgrade', 'src/index.ts'))
    expect(res.json()).toMatchObject({
      id: 'greedy-upgrade',
      state: 'active',
      permissions: { services: { 'hostd.containers': 'read' }, network: false },
      trusted: false,
      ui: { isolate: true },
    })
    expect((await k.t.inject({ url: '/api/greedy-upgrade/version', as: 'viewer' })).json()).toEqual({
      version: '1.0.0',
    })
    expect((await extension('hello'))?.ui?.isolate).toBe(false)
  })
})
