/**
 * The plugin contract's compatibility window (sdk/CHANGELOG.md): a plugin written against an older shape still loads,
 * its warning logged once per load and listed by GET /api/extensions; one that needs a newer kernel API is refused
 * with the reason.
 */
import { mkdtemp, rm, mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { inject } from 'light-my-request'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KERNEL_API_VERSION } from '@hostd/sdk'
import { writePluginFolder } from '@hostd/sdk/testing'
import { loadConfig } from '../src/config.ts'
import { createKernel, type Kernel } from '../src/kernel.ts'

const REPO = fileURLToPath(new URL('../../', import.meta.url))
const [major, minor] = KERNEL_API_VERSION.split('.').map(Number)
/** A range this kernel does not provide: the next minor (^1.2.0 for a 1.1.0 kernel). */
const NEXT_MINOR = `^${major}.${minor! + 1}.0`

/** A third-party plugin folder: package.json, index.js, and its ui/ files. */
async function writePlugin(dir: string, source: string, ui: Record<string, string> = {}) {
  const files = Object.fromEntries(Object.entries(ui).map(([file, text]) => [`ui/${file}`, text]))
  files['index.js'] = `import { definePlugin } from '@hostd/sdk'\nexport default ${source}\n`
  await mkdir(join(dir, 'ui'), { recursive: true })
  await writePluginFolder(dir, { name: 'p', entry: 'index.js', files })
}

describe('the plugin contract across versions', () => {
  let root: string
  let kernel: Kernel
  let token: string
  const logged: { plugin?: string; msg: string }[] = []
  const get = (url: string) => inject(kernel.handler, { url, headers: { authorization: `Bearer ${token}` } })
  const extension = async (id: string) =>
    ((await get('/api/extensions')).json() as Record<string, unknown>[]).find((e) => e.id === id)
  const legacyWarnings = () => logged.filter((l) => l.plugin === 'legacy' && /1\.0\.0 shape/.test(l.msg))

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'hostd-contract-'))
    const plugins = join(root, 'plugins')
    // Written for 1.0.0: `ui` is a list; its second entry is a 1.0.0 nav entry with nothing to mount.
    await writePlugin(
      join(plugins, 'legacy'),
      `definePlugin({
        id: 'legacy', version: '1.0.0', kernel: '^1.0.0',
        ui: [
          { id: 'legacy', title: 'Legacy', path: '/legacy', icon: 'box', module: 'ui/page.js', element: 'legacy-page' },
          { id: 'nav', title: 'Nav only', path: '/legacy-nav' },
        ],
        routes: (r) => r.get('/api/legacy', { role: 'viewer' }, () => ({ ok: true })),
      })`,
      { 'page.js': 'export const legacyPage = true\n' },
    )
    await writePlugin(
      join(plugins, 'newer'),
      `definePlugin({ id: 'newer', version: '1.0.0', kernel: '${NEXT_MINOR}',
        routes: (r) => r.get('/api/newer', { role: 'viewer' }, () => ({ ok: true })) })`,
    )
    const logger = pino({ level: 'warn' }, { write: (line: string) => void logged.push(JSON.parse(line)) })
    const config = loadConfig(
      {
        HOSTD_DATA_DIR: join(root, 'data'),
        HOSTD_PLUGINS_DIR: plugins,
        HOSTD_PORT: '0',
        HOSTD_HOST: '127.0.0.1',
        HOSTD_HELPER_SOCKET: join(root, 'no-helper.sock'),
        HOSTD_BUILTIN_PLUGINS: '0',
      },
      REPO,
    ) // the repository: its built ui/dist is what serves plugin files
    kernel = await createKernel(config, { insecureHttp: true, watch: false, logger })
    const admin = await kernel.services.users.create('admin', 'a long enough password', 'admin')
    token = kernel.services.sessions.create(admin.id, '127.0.0.1')
  })
  afterAll(async () => {
    await kernel?.close()
    await rm(root, { recursive: true, force: true })
  })

  it('loads a plugin with the 1.0.0 ui list, serves its pages, and lists what to change', async () => {
    const legacy = await extension('legacy')
    expect(legacy).toMatchObject({ state: 'active', builtin: false })
    expect(legacy!.warnings).toEqual([
      'ui is a list (the 1.0.0 shape): write ui: { pages: [...] }; kernel API 2.0.0 will refuse the list',
      'ui entry /legacy-nav is not shown: it names no module and element for the shell to mount',
    ])
    expect(legacy!.ui).toEqual({
      pages: [
        {
          path: '/legacy',
          title: 'Legacy',
          icon: 'box',
          role: 'viewer',
          module: '/plugins/legacy/1.0.0/page.js',
          element: 'legacy-page',
        },
      ],
      cards: [],
      // A third-party plugin's pages always run in the sandboxed frame, whatever its manifest says.
      isolate: true,
    })
    const page = await get('/plugins/legacy/1.0.0/page.js')
    expect(page.statusCode, page.body).toBe(200)
    expect(page.body).toContain('legacyPage')
    expect((await get('/api/legacy')).json()).toEqual({ ok: true })
    // A plugin in the current shape lists no warnings at all.
    expect(await extension('newer')).not.toHaveProperty('warnings')
  })

  it('logs the warnings once per load, not on every activation', async () => {
    expect(legacyWarnings()).toHaveLength(1)
    await kernel.registry.disable('legacy')
    await kernel.registry.enable('legacy')
    await kernel.registry.reconcile(join(root, 'plugins', 'legacy'), false) // unchanged: not loaded again
    expect((await extension('legacy'))!.state).toBe('active')
    expect(legacyWarnings()).toHaveLength(1)
  })

  it(`refuses a plugin made for ${NEXT_MINOR} on a ${KERNEL_API_VERSION} kernel, saying what to do`, async () => {
    expect(await extension('newer')).toMatchObject({
      state: 'failed',
      error:
        `needs kernel API ${NEXT_MINOR}, but this kernel provides ${KERNEL_API_VERSION}: ` +
        `install a version of the plugin made for ${KERNEL_API_VERSION}, or a hostd that provides ${NEXT_MINOR}`,
      ui: null,
    })
    expect((await get('/api/newer')).statusCode).toBe(404)
  })
})
