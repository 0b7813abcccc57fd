/**
 * A third-party plugin's manifest names the UI modules the shell mounts: a page or card whose module is not a file in
 * the plugin's folder fails the load, naming the file, instead of loading as active and failing in the browser.
 */
import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '@hostd/sdk/testing'
import { startTestKernel, type TestKernel } from '../src/testing.ts'

/** A plugin folder whose manifest names ui/page.js and ui/card.js; `files` are the ui/ files actually written. */
async function writePlugin(dir: string, id: string, files: string[]): Promise<string> {
  await mkdir(join(dir, 'ui'), { recursive: true })
  await writeFile(
    join(dir, 'package.json'),
    JSON.stringify({ name: `hostd-plugin-${id}`, version: '1.0.0', type: 'module', main: 'index.js' }),
  )
  await writeFile(
    join(dir, 'index.js'),
    `import { definePlugin } from '@hostd/sdk'
export default definePlugin({
  id: '${id}', version: '1.0.0', kernel: '^1.2.0',
  ui: {
    pages: [{ path: '/${id}', title: 'Panel', module: 'ui/page.js', element: '${id}-page' }],
    cards: [{ title: 'Panel card', module: 'ui/card.js', element: '${id}-card' }],
  },
  routes: (r) => r.get('/api/${id}', { role: 'viewer' }, () => ({ ok: true })),
})
`,
  )
  for (const file of files) await writeFile(join(dir, 'ui', file), `export const ${file.replace('.js', '')} = 1\n`)
  return dir
}

describe('a UI module missing from a plugin folder', () => {
  let t: TestKernel
  let scratch: string

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'hostd-ui-module-'))
    t = await startTestKernel({ env: { HOSTD_PLUGINS_ISOLATION: 'off' }, watch: true })
  })
  afterAll(async () => {
    await t?.close()
    await rm(scratch, { recursive: true, force: true })
  })

  it('loads a plugin whose modules are all there', async () => {
    const entry = await t.plugins.install(await writePlugin(join(scratch, 'whole'), 'whole', ['page.js', 'card.js']))
    expect(entry).toMatchObject({ state: 'active', ui: { pages: [{ module: '/plugins/whole/1.0.0/page.js' }] } })
  })

  it('fails a plugin whose page module is not in its folder, naming the file; its routes are not served', async () => {
    const entry = await t.plugins.install(await writePlugin(join(scratch, 'nopage'), 'nopage', ['card.js']))
    expect(entry).toMatchObject({
      state: 'failed',
      version: '1.0.0',
      error: `its UI page "Panel" names the module ui/page.js, which is not a file in the plugin's folder`,
      ui: null,
      dormantPages: [{ path: '/nopage', title: 'Panel' }],
    })
    expect((await t.inject({ url: '/api/nopage', as: 'viewer' })).statusCode).toBe(404)
  })

  it('fails one whose card module is missing, and loads it once the file is added (the watcher reloads it)', async () => {
    const entry = await t.plugins.install(await writePlugin(join(scratch, 'nocard'), 'nocard', ['page.js']))
    expect(entry).toMatchObject({
      state: 'failed',
      error: expect.stringContaining('UI card "Panel card" names the module ui/card.js'),
    })
    await writeFile(join(t.plugins.folder('nocard'), 'ui', 'card.js'), 'export const card = 1\n')
    await eventually(async () => (await t.plugins.entry('nocard'))?.state === 'active')
    expect((await t.inject({ url: '/api/nocard', as: 'viewer' })).json()).toEqual({ ok: true })
  })

  it('fails a loaded plugin reloaded after its module was deleted', async () => {
    await unlink(join(t.plugins.folder('whole'), 'ui', 'page.js'))
    const entry = await t.plugins.reload('whole')
    expect(entry).toMatchObject({ state: 'failed', error: expect.stringContaining('ui/page.js') })
  })

  it('counts a folder where a file should be as missing', async () => {
    const dir = await writePlugin(join(scratch, 'dirpage'), 'dirpage', ['card.js'])
    await mkdir(join(dir, 'ui', 'page.js'))
    expect(await t.plugins.install(dir)).toMatchObject({
      state: 'failed',
      error: expect.stringContaining('ui/page.js'),
    })
  })
})
