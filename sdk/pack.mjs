#!/usr/bin/env node
/**
 * Packs `@hostd/sdk` as one tarball a plugin author installs outside this repository (`npm run pack:sdk -- <dir>`):
 *
 *   node sdk/pack.mjs [destination folder, default: the current folder]   prints the tarball's path
 *
 * The tarball keeps this repository's layout for the parts it carries, because the kernel finds the sdk, the sandbox
 * runner and its own files by paths relative to itself (kernel/src/plugins/loader.ts, kernel/src/isolation/sandbox.ts):
 *   - sdk/dist: the sdk as built for the daemon (kernel/build.mjs: index.mjs, the vendored ORM and TypeBox, the
 *     sandbox runner), plus sdk/dist/testing.mjs, `@hostd/sdk/testing` compiled;
 *   - kernel/dist/testing.mjs: the kernel behind `startTestKernel`, compiled to JavaScript (Node does not strip types
 *     under node_modules), importing the same sdk/dist/index.mjs as plugins do: one HostdError, one set of tokens;
 *   - kernel/dist/main.mjs and ui/dist: the daemon's build and the dashboard, for a browser test of a plugin's page
 *     against a real daemon (`node node_modules/@hostd/sdk/kernel/dist/main.mjs`; the scaffold's test/browser.ts);
 *   - sdk/src/README.md, and no sources: the sandbox (kernel/src/isolation/sandbox.ts) runs sdk/src's TypeScript
 *     instead of sdk/dist when a source there is newer than the build, and npm install gives files the time they were
 *     unpacked; with no source the build is always used (the declarations are in types/);
 *   - types/: declarations of the sdk, `@hostd/sdk/testing` (and the kernel types it names) and the UI kit
 *     (`@hostd/sdk/ui`: what a page imports as `@hostd/ui`), made by tsc.
 * The kernel's npm dependencies are the package's dependencies, fetched from the registry like any others.
 */
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildDaemon, COMMON, sdkForKernel, vendoredFrom } from '../kernel/build.mjs'
import { buildUi } from '../ui/build.mjs'

const SDK = dirname(fileURLToPath(import.meta.url))
const REPO = join(SDK, '..')
const read = (path) => JSON.parse(readFileSync(join(REPO, path), 'utf8'))

/** Dependencies the packed sdk needs at run time (the kernel's) and for its declarations (the kit's, @types). */
function dependencies() {
  const sdk = read('sdk/package.json')
  const kernel = read('kernel/package.json')
  const ui = read('ui/package.json')
  const root = read('package.json')
  const deps = { ...sdk.dependencies, ...kernel.dependencies }
  delete deps['@hostd/sdk']
  // Types the declarations name: the kit's Preact and chart, ws and better-sqlite3's.
  for (const name of ['preact', '@preact/signals', 'htm', 'uplot']) deps[name] = ui.dependencies[name]
  for (const name of ['@types/ws', '@types/better-sqlite3']) deps[name] = root.devDependencies[name]
  return Object.fromEntries(Object.entries(deps).sort(([a], [b]) => a.localeCompare(b)))
}

function packageJson() {
  const sdk = read('sdk/package.json')
  return {
    name: '@hostd/sdk',
    version: sdk.version,
    description: `${sdk.description} Packed with its test kernel and the UI kit's types (sdk/pack.mjs).`,
    type: 'module',
    license: 'MIT',
    exports: {
      '.': { types: './types/sdk/src/index.d.ts', default: './sdk/dist/index.mjs' },
      './testing': { types: './types/sdk/src/testing.d.ts', default: './sdk/dist/testing.mjs' },
      './ui': { types: './types/ui/src/kit/index.d.ts' },
      './package.json': './package.json',
    },
    engines: { node: '>=24' },
    dependencies: dependencies(),
    peerDependencies: { vitest: '*' },
    peerDependenciesMeta: { vitest: { optional: true } },
  }
}

async function compile(stage) {
  const esbuild = await import('esbuild')
  // The kernel's test harness, beside where the daemon's build puts the kernel (kernel/dist), importing sdk/dist.
  await esbuild.build({
    ...COMMON,
    entryPoints: { testing: join(REPO, 'kernel', 'src', 'testing.ts') },
    outdir: join(stage, 'kernel', 'dist'),
    absWorkingDir: REPO,
    plugins: [sdkForKernel, vendoredFrom('../../sdk/dist')],
  })
  // `@hostd/sdk/testing`: loads the kernel above lazily, as its sources load @hostd/kernel/testing.
  const kernelTesting = {
    name: 'hostd-kernel-testing',
    setup(build) {
      build.onResolve({ filter: /^@hostd\/kernel\/testing$/ }, () => ({
        path: '../../kernel/dist/testing.mjs',
        external: true,
      }))
    },
  }
  await esbuild.build({
    ...COMMON,
    entryPoints: { testing: join(REPO, 'sdk', 'src', 'testing.ts') },
    outdir: join(stage, 'sdk', 'dist'),
    absWorkingDir: REPO,
    plugins: [kernelTesting, vendoredFrom('.')],
  })
}

/** Declarations by tsc, with the repository's compiler options; `@hostd/kernel/testing` made a relative import. */
function declarations(stage) {
  const config = join(stage, 'tsconfig.types.json')
  writeFileSync(
    config,
    JSON.stringify({
      extends: join(REPO, 'tsconfig.json'),
      compilerOptions: {
        noEmit: false,
        declaration: true,
        emitDeclarationOnly: true,
        outDir: join(stage, 'types'),
        rootDir: REPO,
        typeRoots: [join(REPO, 'node_modules', '@types')],
      },
      include: [],
      files: ['sdk/src/index.ts', 'sdk/src/testing.ts', 'kernel/src/testing.ts', 'ui/src/kit/index.ts'].map((f) =>
        join(REPO, f),
      ),
    }),
  )
  execFileSync(process.execPath, [join(REPO, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', config], {
    stdio: 'inherit',
  })
  rmSync(config)
  const walk = (dir) =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.d.ts') ? [join(dir, e.name)] : [],
    )
  const kernelTesting = join(stage, 'types', 'kernel', 'src', 'testing.ts')
  for (const file of walk(join(stage, 'types'))) {
    const text = readFileSync(file, 'utf8')
    if (!text.includes("'@hostd/kernel/testing'")) continue
    let path = relative(dirname(file), kernelTesting)
    if (!path.startsWith('.')) path = `./${path}`
    writeFileSync(file, text.replaceAll("'@hostd/kernel/testing'", `'${path}'`))
  }
}

/** Builds, stages and packs the sdk into `destination`; returns the tarball's path. */
export async function packSdk(destination = process.cwd(), { log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const started = performance.now()
  await buildUi({ ifChanged: true, log })
  await buildDaemon({ ifChanged: true, log })
  const stage = mkdtempSync(join(tmpdir(), 'hostd-sdk-pack-'))
  try {
    cpSync(join(SDK, 'dist'), join(stage, 'sdk', 'dist'), { recursive: true, filter: (src) => !src.endsWith('.map') })
    const noMaps = (src) => !src.endsWith('.map') && !src.endsWith('build.json')
    cpSync(join(REPO, 'kernel', 'dist'), join(stage, 'kernel', 'dist'), { recursive: true, filter: noMaps })
    // The shell and the kit, not the built-in plugins' pages (the packed daemon runs none: HOSTD_BUILTIN_PLUGINS=0).
    cpSync(join(REPO, 'ui', 'dist'), join(stage, 'ui', 'dist'), {
      recursive: true,
      filter: (src) => !src.startsWith(join(REPO, 'ui', 'dist', 'plugins')),
    })
    mkdirSync(join(stage, 'sdk', 'src'))
    writeFileSync(
      join(stage, 'sdk', 'src', 'README.md'),
      'The sources of the sdk are in the hostd repository; this package runs its build (../dist) and types (../../types).\n',
    )
    await compile(stage)
    declarations(stage)
    writeFileSync(join(stage, 'package.json'), `${JSON.stringify(packageJson(), null, 2)}\n`)
    cpSync(join(SDK, 'CHANGELOG.md'), join(stage, 'CHANGELOG.md'))
    writeFileSync(
      join(stage, 'README.md'),
      '# @hostd/sdk\n\nThe only package a hostd plugin imports, with `@hostd/sdk/testing` (a real test kernel) and the ' +
        "UI kit's types (`@hostd/sdk/ui`, imported by pages as `@hostd/ui`). The author's guide: docs/PLUGINS.md of " +
        'the hostd repository.\n',
    )
    const out = resolve(destination)
    mkdirSync(out, { recursive: true })
    const [packed] = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--pack-destination', out], { cwd: stage, encoding: 'utf8' }),
    )
    const tarball = join(out, packed.filename)
    if (!existsSync(tarball)) throw new Error(`npm pack wrote no ${tarball}`)
    log(
      `sdk: packed ${tarball} (${packed.entryCount} files, ${Math.round(packed.size / 1024)} KiB) in ${Math.round(performance.now() - started)} ms`,
    )
    return tarball
  } finally {
    rmSync(stage, { recursive: true, force: true })
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  packSdk(process.argv[2]).then(
    (tarball) => process.stdout.write(`${tarball}\n`),
    (err) => {
      process.stderr.write(`sdk: pack failed: ${err.stack ?? err}\n`)
      process.exit(1)
    },
  )
}
