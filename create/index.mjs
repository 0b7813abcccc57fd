#!/usr/bin/env node
/**
 * Makes a new hostd plugin folder from template/ (a route, a socket, a page, a card, harness tests, a type check):
 *
 *   node create/index.mjs <dir> [--id <id>] [--sdk <spec>]     from a clone of hostd
 *   npm init hostd-plugin <dir> -- [--id <id>] [--sdk <spec>]  once this package is published
 *
 * `--id` is the plugin's id (default: the folder's name, lowercased), used for its routes (`/api/<id>`), page
 * (`/<id>`), elements and package name. `--sdk` is what the folder's package.json asks for as `@hostd/sdk`: a tarball
 * made by `npm run pack:sdk -- <dir>` in hostd (a path: written as `file:<absolute path>`), or a version range.
 * Plain JavaScript with no dependencies, so it runs with any Node from a fresh clone.
 */
import { cpSync, existsSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const TEMPLATE = join(dirname(fileURLToPath(import.meta.url)), 'template')
const ID = /^[a-z][a-z0-9-]{0,39}$/

function usage(message) {
  process.stderr.write(`${message}\nusage: create-hostd-plugin <dir> [--id <id>] [--sdk <tarball path or version>]\n`)
  process.exit(2)
}

function parse(argv) {
  const options = { dir: null, id: null, sdk: null }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--id' || arg === '--sdk') {
      if (!argv[i + 1]) usage(`${arg} needs a value`)
      options[arg.slice(2)] = argv[++i]
    } else if (arg.startsWith('-')) usage(`unknown option ${arg}`)
    else if (options.dir) usage(`one folder only (got ${options.dir} and ${arg})`)
    else options.dir = arg
  }
  if (!options.dir) usage('which folder?')
  return options
}

/** `starter` -> the id, `Starter` -> its title (`disk-usage` -> `DiskUsage`: also a class name), in text and names. */
function rename(text, id, title) {
  return text.replaceAll('starter', id).replaceAll('Starter', title)
}

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name)
    return statSync(full).isDirectory() ? walk(full) : [full]
  })
}

/** Makes the plugin folder; returns its absolute path. */
export function createPlugin({ dir, id = null, sdk = null }) {
  const target = resolve(dir)
  if (existsSync(target) && readdirSync(target).length > 0) throw new Error(`${target} exists and is not empty`)
  const pluginId =
    id ??
    basename(target)
      .toLowerCase()
      .replace(/^hostd-plugin-/, '')
  if (!ID.test(pluginId))
    throw new Error(
      `"${pluginId}" is not a plugin id (lowercase letters, digits and -, starting with a letter): pass --id`,
    )
  const title = pluginId
    .split('-')
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join(' ')
  cpSync(TEMPLATE, target, { recursive: true })
  for (const file of walk(target)) {
    writeFileSync(file, rename(readFileSync(file, 'utf8'), pluginId, title.replaceAll(' ', '')))
    const renamed = join(dirname(file), rename(basename(file), pluginId, title))
    if (renamed !== file) renameSync(file, renamed)
  }
  const pkgPath = join(target, 'package.json')
  const pkg = JSON.parse(readFileSync(pkgPath, 'utf8'))
  if (sdk) {
    const spec = existsSync(sdk) ? `file:${resolve(sdk)}` : sdk
    pkg.devDependencies['@hostd/sdk'] = spec
  }
  writeFileSync(pkgPath, `${JSON.stringify(pkg, null, 2)}\n`)
  return target
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const options = parse(process.argv.slice(2))
  try {
    const target = createPlugin(options)
    process.stdout.write(
      `Made ${target}.\nNext: cd ${target} && npm install && npm test\nThe guide: docs/PLUGINS.md of the hostd repository.\n`,
    )
  } catch (err) {
    process.stderr.write(`create-hostd-plugin: ${err.message}\n`)
    process.exit(1)
  }
}
