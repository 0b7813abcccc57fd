/**
 * The author kit end to end, as a plugin author outside this repository gets it: from a fresh clone of this
 * repository (its checked-out files: HEAD plus the working tree's uncommitted changes, no build output), `npm run
 * pack:sdk` makes the sdk's tarball; the scaffold (create/index.mjs) makes a plugin folder in a temporary folder
 * outside the repository; `npm install` there fetches the tarball's dependencies from the registry (the machine's npm
 * cache first); and the folder's own `npm test` (tsc, its harness tests, and its page's test in Chromium against the packed daemon) passes.
 *
 * The clone borrows the repository's node_modules (a link per package; `@hostd/*` pointing at the clone's own
 * workspaces), so what it proves is that the kit needs nothing but checked-in files and the lockfile's packages.
 */
import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { REPO_ROOT } from '../support/daemon.ts'

const run = promisify(execFile)
const temps: string[] = []
afterAll(async () => {
  await Promise.all(temps.map((t) => rm(t, { recursive: true, force: true })))
})

async function temp(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  temps.push(dir)
  return dir
}

/** A clone of the repository as it stands: HEAD, the uncommitted changes, the untracked files that are not ignored. */
async function freshClone(): Promise<string> {
  const clone = join(await temp('hostd-clone-'), 'hostd')
  await run('git', ['clone', '--quiet', '--no-local', REPO_ROOT, clone])
  const { stdout: diff } = await run('git', ['diff', 'HEAD', '--binary'], { cwd: REPO_ROOT, maxBuffer: 64 << 20 })
  if (diff.trim()) {
    const patch = join(dirname(clone), 'worktree.patch')
    writeFileSync(patch, diff)
    await run('git', ['apply', '--whitespace=nowarn', patch], { cwd: clone })
  }
  const { stdout: untracked } = await run('git', ['ls-files', '--others', '--exclude-standard', '-z'], {
    cwd: REPO_ROOT,
  })
  for (const file of untracked.split('\0').filter(Boolean)) {
    mkdirSync(dirname(join(clone, file)), { recursive: true })
    cpSync(join(REPO_ROOT, file), join(clone, file))
  }
  // node_modules: the repository's packages, each linked; the workspaces' links (relative) point into the clone.
  const modules = join(clone, 'node_modules')
  mkdirSync(modules)
  for (const entry of readdirSync(join(REPO_ROOT, 'node_modules'))) {
    if (entry === '@hostd')
      cpSync(join(REPO_ROOT, 'node_modules', entry), join(modules, entry), { recursive: true, verbatimSymlinks: true })
    else symlinkSync(join(REPO_ROOT, 'node_modules', entry), join(modules, entry))
  }
  return clone
}

async function npm(args: string[], cwd: string) {
  try {
    const { stdout, stderr } = await run('npm', args, {
      cwd,
      maxBuffer: 64 << 20,
      env: { ...process.env, CI: '1', NO_COLOR: '1', FORCE_COLOR: undefined },
    })
    return { ok: true, output: `${stdout}\n${stderr}` }
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string }
    return { ok: false, output: `${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}` }
  }
}

describe('author kit', { timeout: 300_000 }, () => {
  it('a scaffolded plugin outside the repository passes its own npm test against the packed sdk', async () => {
    const clone = await freshClone()
    expect(existsSync(join(clone, 'sdk', 'dist'))).toBe(false) // no build output comes with a clone

    const packs = await temp('hostd-sdk-')
    const packed = await npm(['run', '--silent', 'pack:sdk', '--', packs], clone)
    expect(packed.ok, packed.output).toBe(true)
    const tarball = join(packs, readdirSync(packs).find((f) => f.endsWith('.tgz'))!)

    const authors = await temp('hostd-author-')
    const plugin = join(authors, 'uptime')
    await run(process.execPath, [join(clone, 'create', 'index.mjs'), plugin, '--sdk', tarball])
    expect(readdirSync(plugin).sort()).toEqual(
      ['.gitignore', 'README.md', 'package.json', 'src', 'test', 'tsconfig.json', 'ui', 'vitest.config.ts'].sort(),
    )

    const installed = await npm(['install', '--prefer-offline', '--no-audit', '--no-fund'], plugin)
    expect(installed.ok, installed.output).toBe(true)
    // Only what the tarball installs: no path back into the repository or its clone.
    expect(existsSync(join(plugin, 'node_modules', '@hostd', 'sdk', 'kernel', 'dist', 'testing.mjs'))).toBe(true)

    const tested = await npm(['test'], plugin)
    expect(tested.ok, tested.output).toBe(true)
    expect(tested.output).toMatch(/Test Files\s+2 passed/)
    // The page's browser test ran in Chromium (it skips itself only where there is none).
    if (existsSync(process.env.CHROMIUM ?? '/usr/bin/chromium')) expect(tested.output).not.toMatch(/skipped/)
    expect(existsSync(join(plugin, 'test-results', 'uptime-page.png'))).toBe(true)
  })
})
