import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { create as createTar } from 'tar'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'

/**
 * The plugin's life as an admin gives it one: installed from its folder, upgraded to a new version, reloaded after an
 * edit (as the daemon's watcher does), installed from a tarball. `t.plugins` does each as the daemon does and answers
 * the plugin's entry in GET /api/extensions once it is done.
 */
const HERE = fileURLToPath(new URL('..', import.meta.url))

/** A copy of this plugin at `version`, saying `greeting` instead of Hello. */
async function variant(root: string, version: string, greeting: string): Promise<string> {
  const dir = join(root, `hello-${version}`)
  await cp(HERE, dir, { recursive: true, filter: (src) => !src.includes('node_modules') })
  await edit(join(dir, 'package.json'), '"version": "1.0.0"', `"version": "${version}"`)
  await edit(join(dir, 'src', 'index.ts'), "version: '1.0.0'", `version: '${version}'`)
  await edit(join(dir, 'src', 'index.ts'), '`Hello, ', `\`${greeting}, `)
  return dir
}

async function edit(file: string, from: string, to: string): Promise<void> {
  const text = await readFile(file, 'utf8')
  if (!text.includes(from)) throw new Error(`${file} has no ${from}`)
  await writeFile(file, text.replace(from, to))
}

/** Sandboxed, as an installed plugin runs by default, and in the daemon's process (an admin's trusted plugin). */
const modes = { isolated: {}, 'in process': { HOSTD_PLUGINS_ISOLATION: 'off' } }

describe.each(Object.entries(modes))('hello plugin: install, upgrade, reload (%s)', (_mode, env) => {
  let t: TestKernel
  let scratch: string
  const greet = async () => {
    const res = await t.inject({ url: '/api/hello', as: { token } })
    return res.statusCode === 200 ? (res.json() as { message: string }).message : `${res.statusCode}`
  }
  let token: string
  let username: string

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'hello-lifecycle-'))
    t = await startTestKernel({ env })
    ;({ token, username } = await t.login('viewer'))
  })
  afterAll(async () => {
    await t?.close()
    await rm(scratch, { recursive: true, force: true })
  })

  it('installs 1.0.0 from its folder', async () => {
    expect(await greet()).toBe('404')
    const entry = await t.plugins.install(HERE)
    expect(entry).toMatchObject({ id: 'hello', version: '1.0.0', state: 'active', builtin: false })
    expect(await greet()).toBe(`Hello, ${username}!`)
  })

  it('upgrades to 1.1.0 from another folder, which answers with its new text', async () => {
    const entry = await t.plugins.upgrade('hello', await variant(scratch, '1.1.0', 'Good day'))
    expect(entry).toMatchObject({ id: 'hello', version: '1.1.0', state: 'active' })
    expect(entry.ui?.pages[0]?.module).toBe('/plugins/hello/1.1.0/page.js')
    expect(await greet()).toBe(`Good day, ${username}!`)
  })

  it('reloads after a file of its installed folder is edited', async () => {
    await edit(join(t.plugins.folder('hello'), 'src', 'index.ts'), '`Good day, ', '`Welcome back, ')
    const entry = await t.plugins.reload('hello')
    expect(entry).toMatchObject({ version: '1.1.0', state: 'active' })
    expect(await greet()).toBe(`Welcome back, ${username}!`)
  })

  it('reports a reload that fails, with where', async () => {
    await edit(join(t.plugins.folder('hello'), 'src', 'index.ts'), 'export default', 'export default {')
    const entry = await t.plugins.reload('hello')
    expect(entry).toMatchObject({
      state: 'failed',
      version: '1.1.0',
      errorOrigin: expect.stringMatching(/^src\/index\.ts:\d+/),
    })
    expect(await greet()).toBe('404')
  })

  it('installs from a tarball, as npm pack lays it out (after a removal)', async () => {
    await t.plugins.remove('hello')
    expect(await t.plugins.entry('hello')).toBeUndefined()
    const dir = await variant(scratch, '1.2.0', 'Hi')
    const tgz = join(scratch, 'hostd-plugin-hello-1.2.0.tgz')
    await createTar({ gzip: true, cwd: dir, prefix: 'package', file: tgz, portable: true }, [
      'package.json',
      'src',
      'ui',
    ])
    const entry = await t.plugins.install(tgz)
    expect(entry).toMatchObject({ id: 'hello', version: '1.2.0', state: 'active' })
    expect(await greet()).toBe(`Hi, ${username}!`)
  })

  it('throws with the code when the daemon refuses the package', async () => {
    const junk = join(scratch, 'junk.tgz')
    await writeFile(junk, 'not a tarball')
    await expect(t.plugins.install(junk)).rejects.toMatchObject({ code: 'HOSTD_PLUGIN_BAD_ARCHIVE', statusCode: 400 })
    await expect(t.plugins.upgrade('nope', HERE)).rejects.toThrow('plugin "nope" is not installed')
  })
})
