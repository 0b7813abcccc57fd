#!/usr/bin/env node
/**
 * The daemon's build runner (plain JavaScript, the sibling of ui/build.mjs, whose input hashing it reuses):
 *
 *   node kernel/build.mjs               build now
 *   node kernel/build.mjs --if-changed  build only when a source differs from the last build (npm start, npm install)
 *
 * It compiles the daemon's TypeScript to plain JavaScript with esbuild, so the daemon pays no type stripping at run
 * time (memory and start time: docs/ARCHITECTURE.md, "Runtime"). Four kinds of output, each beside its sources:
 *   - sdk/dist/index.mjs: the sdk, once. The kernel and every plugin import this one file, so there is one HostdError
 *     class and one set of tokens;
 *   - kernel/dist/main.mjs: the daemon's entry, which applies the runtime settings (a re-exec when missing) before it
 *     imports the rest of the kernel, split into kernel/dist/daemon-<hash>.mjs;
 *   - plugins/<folder>/dist/index.mjs: each built-in plugin in one file, `@hostd/sdk` left as a bare import (the
 *     kernel's module hook points it at sdk/dist), so a plugin loads as a fresh module graph as before.
 *   - sdk/dist/vendor/*.mjs: the ORM's packages, Kysely and TypeBox, bundled once (VENDORED below), imported by all.
 * Other npm packages stay external (loaded from node_modules as they ship: already JavaScript, native addons included).
 * Source maps (`.map` beside each file) let stack traces name the `.ts` lines. Each dist folder is built into a
 * temporary folder and swapped in, and the inputs' hash is written last (kernel/dist/build.json), so a failed or
 * interrupted build is rebuilt on the next run.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { mkdir, rename, rm, writeFile } from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { hashInputs } from '../ui/build.mjs'

const KERNEL = dirname(fileURLToPath(import.meta.url))
const REPO = join(KERNEL, '..')
const MARKER = join(KERNEL, 'dist', 'build.json')

/** The built-in plugins: every folder of plugins/ with a package.json naming its entry. */
function builtinPlugins() {
  const root = join(REPO, 'plugins')
  if (!existsSync(root)) return []
  return readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory() && !d.name.startsWith('.') && existsSync(join(root, d.name, 'package.json')))
    .map((d) => {
      const pkg = JSON.parse(readFileSync(join(root, d.name, 'package.json'), 'utf8'))
      return {
        name: d.name,
        dir: join(root, d.name),
        entry: join(root, d.name, pkg.hostd?.entry ?? pkg.main ?? 'src/index.ts'),
      }
    })
    .sort((a, b) => a.name.localeCompare(b.name))
}

function inputsHash(plugins) {
  const version = (pkg) => JSON.parse(readFileSync(join(REPO, 'node_modules', pkg, 'package.json'), 'utf8')).version
  const sources = [
    join(KERNEL, 'src'),
    join(KERNEL, 'build.mjs'),
    join(REPO, 'sdk', 'src'),
    ...plugins.flatMap((p) => [join(p.dir, 'src'), join(p.dir, 'package.json')]),
  ]
  // The vendored packages are built into sdk/dist too: a new version of one is a new build.
  const vendored = [...new Set(Object.keys(VENDORED).map(packageOf))].map((pkg) => `${pkg}@${version(pkg)}`)
  return hashInputs(sources, [`esbuild@${version('esbuild')}`, `node@${process.versions.node}`, ...vendored])
}

export const COMMON = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  // npm packages load from node_modules as they ship; only hostd's own TypeScript is compiled.
  packages: 'external',
  outExtension: { '.js': '.mjs' },
  sourcemap: 'linked',
  // The maps point at the sources in the repository; carrying the sources too would only make them bigger.
  sourcesContent: false,
  legalComments: 'none',
  // V8 keeps every script's source text in the heap for the process's life: without comments and indentation, the
  // daemon's and the plugins' bundles take less of it. Names are kept, and stack traces map to the sources anyway.
  minifyWhitespace: true,
  logLevel: 'warning',
  metafile: true,
}

/** The kernel imports the sdk's built file by a relative path, so it is linked with the kernel, before any hook. */
export const sdkForKernel = {
  name: 'hostd-sdk-for-kernel',
  setup(build) {
    build.onResolve({ filter: /^@hostd\/sdk$/ }, () => ({ path: '../../sdk/dist/index.mjs', external: true }))
  },
}

/**
 * npm packages of many small ES modules, bundled once into sdk/dist/vendor (one file per entry, shared code in
 * chunks): the ORM with its SQL layer, Kysely and TypeBox are about 680 modules, and loading them one by one cost the
 * daemon about a fifth of its start's CPU and 9 MiB (docs/decisions/measurements.md, "Runtime"). The sdk, the kernel and the
 * plugins import the same files, so there is one copy of each class (MikroORM checks `instanceof` across them).
 */
const VENDORED = {
  '@mikro-orm/core': 'mikro-orm-core',
  '@mikro-orm/sql': 'mikro-orm-sql',
  '@mikro-orm/sqlite': 'mikro-orm-sqlite',
  kysely: 'kysely',
  '@sinclair/typebox': 'typebox',
  '@sinclair/typebox/value': 'typebox-value',
}
const packageOf = (specifier) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/')

/** Points imports of a vendored package at its bundle, by a path relative to the importing output file. */
export const vendoredFrom = (toSdkDist) => ({
  name: 'hostd-vendored',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => {
      if (!(packageOf(args.path) in VENDORED)) return undefined
      const name = VENDORED[args.path]
      if (!name)
        throw new Error(
          `${args.path}: only the vendored packages' entries may be imported (${Object.keys(VENDORED).join(', ')})`,
        )
      return { path: `${toSdkDist}/vendor/${name}.mjs`, external: true }
    })
  },
})

/** Bundles the vendored packages themselves; everything else they import stays external. */
const vendorOnly = {
  name: 'hostd-vendor-only',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) =>
      args.kind === 'entry-point' || packageOf(args.path) in VENDORED ? undefined : { path: args.path, external: true },
    )
  },
}

async function buildInto(stage, plugins) {
  const esbuild = await import('esbuild')
  await esbuild.build({
    ...COMMON,
    packages: undefined,
    // Third-party code: no source map to carry, and no whitespace either (the source text stays in V8's heap for
    // as long as the daemon runs: 2.3 -> 1.6 MB, about 2-4 MiB of RSS). Names are kept: stack traces still read.
    sourcemap: false,
    minifyWhitespace: true,
    // Each package as an import would find it (its ES module build where it ships two).
    entryPoints: Object.fromEntries(Object.entries(VENDORED).map(([pkg, name]) => [name, pkg])),
    absWorkingDir: REPO,
    outdir: join(stage, 'sdk', 'vendor'),
    splitting: true,
    chunkNames: 'chunk-[hash]',
    plugins: [vendorOnly],
  })
  await esbuild.build({
    ...COMMON,
    // The runner of an isolated plugin's process too (kernel/src/isolation): as JavaScript it starts without Node's
    // type stripper (about 17 MiB less for a plugin written in JavaScript).
    entryPoints: {
      index: join(REPO, 'sdk', 'src', 'index.ts'),
      'isolated/runner': join(REPO, 'sdk', 'src', 'isolated', 'runner.ts'),
    },
    outdir: join(stage, 'sdk'),
    plugins: [vendoredFrom('.')],
  })
  await esbuild.build({
    ...COMMON,
    // Imported by the runner only for a plugin with its own database, so the others load none of the ORM.
    entryPoints: { database: join(REPO, 'sdk', 'src', 'isolated', 'database.ts') },
    outdir: join(stage, 'sdk', 'isolated'),
    plugins: [vendoredFrom('..')],
  })
  await esbuild.build({
    ...COMMON,
    entryPoints: { main: join(KERNEL, 'src', 'main.ts') },
    outdir: join(stage, 'kernel'),
    // main.mjs stays small: the rest of the kernel is a chunk it imports once the runtime settings are in place.
    splitting: true,
    chunkNames: '[name]-[hash]',
    plugins: [sdkForKernel, vendoredFrom('../../sdk/dist')],
  })
  if (plugins.length) {
    await esbuild.build({
      ...COMMON,
      entryPoints: Object.fromEntries(plugins.map((p) => [`${p.name}/index`, p.entry])),
      outdir: join(stage, 'plugins'),
      plugins: [vendoredFrom('../../../sdk/dist')],
    })
  }
}

/** Moves each staged dist folder into place (`<package>/dist`), replacing the previous one. */
async function swapIn(stage, plugins) {
  const targets = [
    [join(stage, 'sdk'), join(REPO, 'sdk', 'dist')],
    [join(stage, 'kernel'), join(KERNEL, 'dist')],
    ...plugins.map((p) => [join(stage, 'plugins', p.name), join(p.dir, 'dist')]),
  ]
  for (const [from, to] of targets) {
    const old = `${to}.old-${process.pid}`
    if (existsSync(to)) await rename(to, old)
    await rename(from, to)
    await rm(old, { recursive: true, force: true })
  }
}

/** Builds the daemon (or skips when `ifChanged` and the inputs are the last build's). Returns what it did. */
export async function buildDaemon({ ifChanged = false, log = (line) => process.stdout.write(`${line}\n`) } = {}) {
  const plugins = builtinPlugins()
  const hash = inputsHash(plugins)
  const previous = existsSync(MARKER) ? JSON.parse(readFileSync(MARKER, 'utf8')) : null
  const complete = () =>
    existsSync(join(KERNEL, 'dist', 'main.mjs')) && plugins.every((p) => existsSync(join(p.dir, 'dist', 'index.mjs')))
  if (ifChanged && previous?.inputs === hash && complete()) return { built: false }
  const started = performance.now()
  const stage = join(REPO, `.daemon-build-${process.pid}`)
  await rm(stage, { recursive: true, force: true })
  await mkdir(stage, { recursive: true })
  try {
    await buildInto(stage, plugins)
    await swapIn(stage, plugins)
  } finally {
    await rm(stage, { recursive: true, force: true })
  }
  await writeFile(
    MARKER,
    `${JSON.stringify({ inputs: hash, builtAt: new Date().toISOString(), plugins: plugins.map((p) => relative(REPO, p.dir)) }, null, 1)}\n`,
  )
  log(
    `daemon: built kernel/dist, sdk/dist and ${plugins.length} plugins' dist in ${Math.round(performance.now() - started)} ms`,
  )
  return { built: true }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  buildDaemon({ ifChanged: process.argv.includes('--if-changed') }).catch((err) => {
    process.stderr.write(`daemon: build failed: ${err.message}\n`)
    process.exit(1)
  })
}
