/**
 * End-to-end, a plugin that does not parse is listed with the file, line and column of its syntax error and the
 * version its package.json states (issue 28, items 5 and 10): Node names no place in an ES module's SyntaxError (only
 * the line, for TypeScript), so the kernel parses the plugin's files again (loader.ts, `locateSyntaxError`). The real
 * daemon (its build), in both modes of third-party plugins: sandboxed (the default) and in the daemon's process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { eventually } from '@hostd/sdk/testing'
import { startDaemon, type Daemon } from '../support/daemon.ts'

const PASSWORD = 'correct horse battery'

interface Listed {
  id: string
  version: string | null
  state: string
  error?: string
  errorOrigin?: string
}

async function json(d: Daemon, path: string, init: Parameters<Daemon['fetch']>[1] = {}): Promise<any> {
  const res = await d.fetch(path, init)
  expect(res.status, path).toBeLessThan(300)
  return res.json()
}

/** First-run setup of the admin, then a client sign-in: the session token. */
async function adminToken(d: Daemon): Promise<string> {
  const body = JSON.stringify({ username: 'admin', password: PASSWORD })
  const headers = { 'content-type': 'application/json' }
  await json(d, '/api/setup', { method: 'POST', headers, body })
  const signedIn = await json(d, '/api/auth/login', {
    method: 'POST',
    headers: { ...headers, 'x-svc-client': 'e2e' },
    body,
  })
  return signedIn.token as string
}

async function writeFolder(dir: string, files: Record<string, string>): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true })
    await writeFile(join(dir, path), text)
  }
}

const pkg = (name: string, version: string, main: string) => JSON.stringify({ name, version, type: 'module', main })

describe.each(['on', 'off'])('a plugin that does not parse (isolation %s)', (isolation) => {
  let d: Daemon
  let token: string
  beforeAll(async () => {
    d = await startDaemon({ env: { HOSTD_PLUGINS_ISOLATION: isolation } })
    token = await adminToken(d)
  })
  afterAll(() => d?.stop())

  const listed = async (id: string): Promise<Listed | undefined> =>
    ((await json(d, '/api/extensions', { headers: { authorization: `Bearer ${token}` } })) as Listed[]).find(
      (e) => e.id === id,
    )
  const failed = (id: string) => eventually(async () => ((await listed(id))?.state === 'failed' ? listed(id) : null))

  it('TypeScript, in a file its entry imports: the file, line and column, and its package.json version', async () => {
    const dir = join(d.pluginsDir, 'broken-ts')
    await writeFolder(dir, {
      'package.json': pkg('broken-ts', '2.3.4', 'src/index.ts'),
      'src/index.ts': "import { helper } from './helper.ts'\nexport default helper\n",
      'src/helper.ts': 'export const helper: number = 1\nconst b = (\n  3 +\n}\n',
    })
    const entry = await failed('broken-ts')
    expect(entry).toMatchObject({ version: '2.3.4', state: 'failed' })
    expect(entry?.error).toMatch(/^could not load: .+ \(at src\/helper\.ts:4:1\)$/)
    expect(entry?.errorOrigin).toBe('src/helper.ts:4')
  })

  it('TypeScript whose types strip but whose code does not parse', async () => {
    const dir = join(d.pluginsDir, 'broken-ts-code')
    await writeFolder(dir, {
      'package.json': pkg('broken-ts-code', '1.0.0', 'src/index.ts'),
      'src/index.ts': "const id: string = 'broken-ts-code'\nexport default {\n  id,,\n}\n",
    })
    const entry = await failed('broken-ts-code')
    expect(entry?.error).toMatch(/^could not load: .+ \(at src\/index\.ts:3:6\)$/)
    expect(entry?.errorOrigin).toBe('src/index.ts:3')
  })

  it('JavaScript, where Node names no place at all', async () => {
    const dir = join(d.pluginsDir, 'broken-js')
    await writeFolder(dir, {
      'package.json': pkg('broken-js', '0.9.0', 'index.mjs'),
      'index.mjs': "export default {\n  id: 'broken-js',\n  a: 1,,\n}\n",
    })
    const entry = await failed('broken-js')
    expect(entry).toMatchObject({ version: '0.9.0', state: 'failed' })
    expect(entry?.error).toMatch(/^could not load: .+ \(at index\.mjs:3:8\)$/)
    expect(entry?.errorOrigin).toBe('index.mjs:3')
  })
})
