#!/usr/bin/env node
/**
 * The web UI's build runner (plain JavaScript, so nothing is type-stripped to run it):
 *
 *   node ui/build.mjs               build ui/dist now
 *   node ui/build.mjs --if-changed  build only when a source differs from the last build (npm start, npm install)
 *
 * It builds with esbuild, in one pass per folder: the shell and the shared kit (ui/src) into ui/dist/assets with
 * content-hashed names, and each built-in plugin's pages (plugins/<folder>/ui/*.tsx) into ui/dist/plugins/<folder>,
 * with preact, signals and the kit left as bare imports that the page's import map resolves to the shell's copies.
 * Then it writes index.html and frame.html, precompresses every text file (gzip and brotli) and records the
 * content hash of its inputs in ui/dist/build.json. It builds into a temporary folder and swaps it in, so a
 * failed build leaves the last good one. `hashInputs` and `compressTree` are exported for other targets
 * (kernel/build.mjs, the daemon's build, uses `hashInputs`).
 */
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises'
import { dirname, extname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { brotliCompress, constants as zlib, gzip } from 'node:zlib'

const UI = dirname(fileURLToPath(import.meta.url))
const REPO = join(UI, '..')
export const DIST = join(UI, 'dist')

/** Bare specifiers pages import; the import map points each at one file of the shell's build. */
const SHARED = {
  preact: 'src/shared/preact.ts',
  'preact/hooks': 'src/shared/preact-hooks.ts',
  'preact/jsx-runtime': 'src/shared/jsx-runtime.ts',
  '@preact/signals': 'src/shared/signals.ts',
  'htm/preact': 'src/shared/htm.ts',
  '@hostd/ui': 'src/kit/index.ts',
}
const PAGE_ENTRY = /^[^.].*\.(?:tsx|ts|jsx|js|mjs)$/
const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.json', '.svg', '.txt'])

/** A stable hash of files and folders (recursively, sorted), plus extra strings (tool versions). */
export function hashInputs(paths, extra = []) {
  const hash = createHash('sha256')
  const visit = (path) => {
    if (!existsSync(path)) return
    const st = statSync(path)
    if (st.isDirectory()) {
      for (const name of readdirSync(path).sort())
        if (name !== 'node_modules' && name !== 'dist' && !name.startsWith('.')) visit(join(path, name))
    } else if (st.isFile()) {
      hash.update(relative(REPO, path)).update('\0').update(readFileSync(path)).update('\0')
    }
  }
  for (const path of paths) visit(path)
  for (const value of extra) hash.update(value).update('\0')
  return hash.digest('hex')
}

/** Writes `file.gz` and `file.br` beside every text file of a tree that compression makes smaller. */
export async function compressTree(root) {
  const gz = promisify(gzip)
  const br = promisify(brotliCompress)
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !COMPRESSIBLE.has(extname(entry.name))) continue
    const file = join(entry.parentPath, entry.name)
    const body = await readFile(file)
    if (body.length <= 256) continue
    const [g, b] = await Promise.all([
      gz(body, { level: 9 }),
      br(body, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: body.length } }),
    ])
    if (g.length < body.length) await writeFile(`${file}.gz`, g)
    if (b.length < body.length) await writeFile(`${file}.br`, b)
  }
}

function pluginUiFolders() {
  const root = join(REPO, 'plugins')
  if (!existsSync(root)) return []
  return readdirSync(root)
    .sort()
    .map((name) => ({ name, dir: join(root, name, 'ui') }))
    .filter((p) => existsSync(p.dir))
}

function version(pkg) {
  return JSON.parse(readFileSync(join(REPO, 'node_modules', pkg, 'package.json'), 'utf8')).version
}

/** The installed versions of what a plugin's package.json depends on (its pages bundle some: xterm.js, noVNC). */
function pluginDependencies() {
  return pluginUiFolders().flatMap(({ name }) => {
    const pkg = JSON.parse(readFileSync(join(REPO, 'plugins', name, 'package.json'), 'utf8'))
    return Object.keys(pkg.dependencies ?? {}).map((dep) => {
      const own = join(REPO, 'plugins', name, 'node_modules', dep, 'package.json')
      const file = existsSync(own) ? own : join(REPO, 'node_modules', dep, 'package.json')
      return `${dep}@${existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')).version : 'missing'}`
    })
  })
}

function inputsHash() {
  const tools = ['esbuild', 'preact', '@preact/signals', '@preact/signals-core', 'htm', 'uplot', 'lucide'].map(
    (p) => `${p}@${version(p)}`,
  )
  return hashInputs(
    [join(UI, 'src'), join(UI, 'build.mjs'), ...pluginUiFolders().map((p) => p.dir)],
    [...tools, ...pluginDependencies()],
  )
}

const COMMON = {
  bundle: true,
  format: 'esm',
  target: 'es2022',
  platform: 'browser',
  minify: true,
  splitting: true,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
  define: { 'process.env.NODE_ENV': '"production"' },
}

/**
 * The document's inline script besides the import map (its hash goes into the page's CSP, kernel/src/ui/server.ts).
 * When the entry module or one of its static imports fails to load (Chromium drops loads in flight when the
 * machine's network interfaces change: ERR_NETWORK_CHANGED, which starting a container causes when the browser runs
 * on the managed host), the entry is imported again, up to three times (a failed fetch is fetched anew), and then
 * the page says what happened instead of staying blank.
 */
const BOOT_RETRY =
  "addEventListener('error',function(e){var s=e.target,n=0;" +
  "if(!(s instanceof HTMLScriptElement)||s.type!=='module')return;" +
  '(function retry(){setTimeout(function(){import(s.src).catch(function(){if(++n<3)retry();' +
  'else document.body.innerHTML=\'<p style="font:16px system-ui;padding:2rem">' +
  'hostd could not load this page: the connection was interrupted. <a href="">Reload</a></p>\'' +
  '})},300*(n+1))})()},true)'

function documentHtml({ title, css, importMap, entry, preload, body }) {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${title}</title>
<link rel="icon" href="/ui/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${css}">
<script type="importmap">${JSON.stringify(importMap)}</script>
${preload.map((href) => `<link rel="modulepreload" href="${href}">`).join('\n')}
<script>${BOOT_RETRY}</script>
<script type="module" src="${entry}"></script>
</head>
<body>${body}</body>
</html>
`
}

/** The files an entry loads before it runs: itself and its static imports, transitively (from esbuild's metafile). */
function staticClosure(metafile, outfile) {
  const seen = new Set()
  const visit = (file) => {
    if (seen.has(file)) return
    seen.add(file)
    for (const imp of metafile.outputs[file]?.imports ?? [])
      if (imp.kind === 'import-statement' && !imp.external) visit(imp.path)
  }
  visit(outfile)
  return [...seen]
}

async function buildInto(out) {
  const esbuild = await import('esbuild')
  const assets = join(out, 'assets')
  const entryPoints = {
    main: join(UI, 'src/main.tsx'),
    frame: join(UI, 'src/frame.tsx'),
    app: join(UI, 'src/styles/app.css'),
    ...Object.fromEntries(
      Object.entries(SHARED).map(([spec, file]) => [
        spec.replace(/[@/]/g, (c) => (c === '/' ? '-' : '')),
        join(UI, file),
      ]),
    ),
  }
  const shell = await esbuild.build({
    ...COMMON,
    entryPoints,
    outdir: assets,
    entryNames: '[name]-[hash]',
    chunkNames: 'chunk-[hash]',
    assetNames: '[name]-[hash]',
  })
  const url = (file) => `/ui/${relative(out, join(REPO, file)).replaceAll('\\', '/')}`
  const outputOf = (entry) =>
    Object.entries(shell.metafile.outputs).find(
      ([, o]) => o.entryPoint && join(REPO, o.entryPoint) === entry && !o.entryPoint.endsWith('.css'),
    )?.[0]
  const cssOut = Object.entries(shell.metafile.outputs).find(([f, o]) => f.endsWith('.css') && o.entryPoint)?.[0]
  const importMap = {
    imports: Object.fromEntries(Object.entries(SHARED).map(([spec, file]) => [spec, url(outputOf(join(UI, file)))])),
  }
  for (const [name, title, body] of [
    ['main', 'hostd', '<div id="app"></div><noscript>hostd needs JavaScript.</noscript>'],
    ['frame', 'hostd plugin', '<main id="frame"></main>'],
  ]) {
    const entry = outputOf(entryPoints[name])
    const preload = staticClosure(shell.metafile, entry).map(url)
    await writeFile(
      join(out, `${name === 'main' ? 'index' : 'frame'}.html`),
      documentHtml({ title, css: url(cssOut), importMap, entry: url(entry), preload, body }),
    )
  }
  await writeFile(join(out, 'favicon.svg'), await readFile(join(UI, 'src/favicon.svg')))

  const external = Object.keys(SHARED)
  const plugins = {}
  for (const { name, dir } of pluginUiFolders()) {
    const entries = readdirSync(dir)
      .filter((f) => PAGE_ENTRY.test(f) && statSync(join(dir, f)).isFile())
      .map((f) => join(dir, f))
    if (entries.length === 0) continue
    const result = await esbuild.build({
      ...COMMON,
      entryPoints: entries,
      external,
      outdir: join(out, 'plugins', name),
      entryNames: '[name]',
      chunkNames: 'chunk-[hash]',
    })
    plugins[name] = Object.keys(result.metafile.outputs).map((f) => relative(out, join(REPO, f)))
  }
  await compressTree(out)
  return { importMap, shell: Object.keys(shell.metafile.outputs).map((f) => relative(out, join(REPO, f))), plugins }
}

/** Builds ui/dist (or skips when `ifChanged` and the inputs are the last build's). Returns what it did. */
export async function buildUi({ ifChanged = false, log = (line) => process.stdout.write(`${line}\n`) } = {}) {
  const hash = inputsHash()
  const previous = existsSync(join(DIST, 'build.json'))
    ? JSON.parse(readFileSync(join(DIST, 'build.json'), 'utf8'))
    : null
  if (ifChanged && previous?.inputs === hash && existsSync(join(DIST, 'index.html'))) return { built: false, dir: DIST }
  const started = performance.now()
  const tmp = join(UI, `.dist-${process.pid}`)
  await rm(tmp, { recursive: true, force: true })
  await mkdir(tmp, { recursive: true })
  try {
    const report = await buildInto(tmp)
    await writeFile(
      join(tmp, 'build.json'),
      `${JSON.stringify({ inputs: hash, builtAt: new Date().toISOString(), ...report }, null, 1)}\n`,
    )
    const old = join(UI, `.dist-old-${process.pid}`)
    if (existsSync(DIST)) await rename(DIST, old)
    await rename(tmp, DIST)
    await rm(old, { recursive: true, force: true })
  } catch (err) {
    await rm(tmp, { recursive: true, force: true })
    throw err
  }
  log(`ui: built ui/dist in ${Math.round(performance.now() - started)} ms`)
  return { built: true, dir: DIST }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  buildUi({ ifChanged: process.argv.includes('--if-changed') }).catch((err) => {
    process.stderr.write(`ui: build failed: ${err.message}\n`)
    process.exit(1)
  })
}
