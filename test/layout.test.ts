/**
 * The boundaries docs/ARCHITECTURE.md draws, read from the sources: the kernel imports no plugin; a plugin imports
 * nothing of the kernel (it has the sdk) and nothing of another plugin except `import type` from that plugin's
 * `src/api.ts`, its types-only contract; the web UI's shell and kit (ui/src) import no plugin. Type-only imports are
 * erased, so a plugin still loads none of another plugin's code. The TypeScript parser reads the imports (static,
 * re-exports, dynamic `import()`), so a comment or a string that looks like one does not count.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { REPO_ROOT } from './support/daemon.ts'

const SKIP_DIRS = new Set(['node_modules', 'dist'])

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.isDirectory())
      return SKIP_DIRS.has(entry.name) || entry.name.startsWith('.') ? [] : sourceFiles(join(dir, entry.name))
    return /\.(ts|tsx|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [join(dir, entry.name)] : []
  })
}

/** Where an import leads: the kernel, a plugin (by folder name), or elsewhere (the sdk, the UI kit, npm, node). */
type Area = { kind: 'kernel' } | { kind: 'plugin'; name: string; path: string } | { kind: 'other' }

function areaOf(fromFile: string, specifier: string): Area {
  if (specifier === '@hostd/kernel' || specifier.startsWith('@hostd/kernel/')) return { kind: 'kernel' }
  const byPackage = /^@hostd\/plugin-([^/]+)(\/.*)?$/.exec(specifier)
  if (byPackage) return { kind: 'plugin', name: byPackage[1]!, path: (byPackage[2] ?? '').slice(1) }
  if (!specifier.startsWith('.')) return { kind: 'other' }
  const parts = relative(REPO_ROOT, resolve(dirname(fromFile), specifier)).split(sep)
  if (parts[0] === 'kernel') return { kind: 'kernel' }
  if (parts[0] === 'plugins' && parts[1]) return { kind: 'plugin', name: parts[1], path: parts.slice(2).join('/') }
  return { kind: 'other' }
}

interface Import {
  file: string
  line: number
  specifier: string
  /** Erased when compiled: `import type ...` or `export type ... from`. */
  typeOnly: boolean
}

function importsOf(file: string, text = readFileSync(file, 'utf8')): Import[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const found: Import[] = []
  const add = (node: ts.Node, specifier: ts.Expression | undefined, typeOnly: boolean) => {
    if (!specifier || !ts.isStringLiteralLike(specifier)) return
    const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1
    found.push({ file: relative(REPO_ROOT, file), line, specifier: specifier.text, typeOnly })
  }
  const visit = (node: ts.Node): void => {
    // `import { type A }` is not erased under verbatimModuleSyntax (it leaves `import {} from`): only the clause counts.
    if (ts.isImportDeclaration(node)) add(node, node.moduleSpecifier, node.importClause?.isTypeOnly ?? false)
    else if (ts.isExportDeclaration(node)) add(node, node.moduleSpecifier, node.isTypeOnly)
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference))
      add(node, node.moduleReference.expression, node.isTypeOnly)
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword)
      add(node, node.arguments[0], false)
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument))
      add(node, node.argument.literal as ts.Expression, true)
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

const show = (i: Import) => `${i.file}:${i.line} ${i.typeOnly ? 'import type ' : ''}'${i.specifier}'`

/** What a plugin's file may not import: the kernel, another plugin's code, or anything of another plugin but its api. */
function pluginViolations(plugin: string, file: string, text?: string): string[] {
  return importsOf(file, text).flatMap((i) => {
    const area = areaOf(file, i.specifier)
    if (area.kind === 'kernel') return [`${show(i)}: a plugin imports nothing of the kernel (use @hostd/sdk)`]
    if (area.kind !== 'plugin' || area.name === plugin) return []
    if (i.typeOnly && area.path === 'src/api.ts') return []
    return [`${show(i)}: of another plugin, only \`import type\` from its src/api.ts`]
  })
}

/** A plugin's api.ts holds types only: type-only imports and re-exports, interfaces and type aliases. */
function apiViolations(file: string, text = readFileSync(file, 'utf8')): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  return source.statements.flatMap((statement) => {
    const typeOnly =
      ts.isInterfaceDeclaration(statement) ||
      ts.isTypeAliasDeclaration(statement) ||
      (ts.isImportDeclaration(statement) && statement.importClause?.isTypeOnly === true) ||
      (ts.isExportDeclaration(statement) && statement.isTypeOnly)
    if (typeOnly) return []
    const line = source.getLineAndCharacterOfPosition(statement.getStart()).line + 1
    return [`${relative(REPO_ROOT, file)}:${line}: api.ts holds types only (\`${statement.getText().split('\n')[0]}\`)`]
  })
}

const PLUGINS_DIR = join(REPO_ROOT, 'plugins')
const folders = (dir: string) =>
  readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.'))
    .map((entry) => entry.name)
const plugins = folders(PLUGINS_DIR)

/** A plugin's shipped code: its src/ and its ui/ (its tests may start other plugins, as a kernel would). */
const pluginFiles = (dir: string) =>
  ['src', 'ui'].flatMap((part) => {
    try {
      return sourceFiles(join(dir, part))
    } catch {
      return []
    }
  })

describe('layout', () => {
  it('finds the imports it judges (the scan itself works)', () => {
    expect(plugins).toContain('containers')
    const probe = join(PLUGINS_DIR, 'catalog', 'src', 'probe.ts')
    const text = [
      "import type { A } from '../../containers/src/api.ts'",
      "import { type B } from '../../containers/src/api.ts'",
      "export { c } from '../../containers/src/service.ts'",
      "const d = await import('../../storage/src/index.ts')",
      "import { e } from '../../../kernel/src/main.ts'",
      "import type { F } from '@hostd/plugin-storage/src/routes.ts'",
      "// import { g } from '../../storage/src/index.ts'",
      "import { own } from './service.ts'",
      "import { Type } from '@hostd/sdk'",
    ].join('\n')
    expect(pluginViolations('catalog', probe, text).map((v) => v.split(': ')[0])).toEqual([
      "plugins/catalog/src/probe.ts:2 '../../containers/src/api.ts'",
      "plugins/catalog/src/probe.ts:3 '../../containers/src/service.ts'",
      "plugins/catalog/src/probe.ts:4 '../../storage/src/index.ts'",
      "plugins/catalog/src/probe.ts:5 '../../../kernel/src/main.ts'",
      "plugins/catalog/src/probe.ts:6 import type '@hostd/plugin-storage/src/routes.ts'",
    ])
    const api = join(PLUGINS_DIR, 'containers', 'src', 'api.ts')
    const apiText =
      "import type { X } from './x.ts'\nexport interface Y {}\nexport type Z = X\nexport const token = 1\n"
    expect(apiViolations(api, apiText)).toEqual([
      'plugins/containers/src/api.ts:4: api.ts holds types only (`export const token = 1`)',
    ])
  })

  it('the kernel imports no plugin', () => {
    const kernel = join(REPO_ROOT, 'kernel', 'src')
    const found = sourceFiles(kernel).flatMap((file) =>
      importsOf(file)
        .filter((i) => areaOf(file, i.specifier).kind === 'plugin')
        .map(show),
    )
    expect(found).toEqual([])
  })

  it('ui/src (the shell and the kit) imports no plugin', () => {
    const ui = join(REPO_ROOT, 'ui', 'src')
    const found = sourceFiles(ui).flatMap((file) =>
      importsOf(file)
        .filter((i) => areaOf(file, i.specifier).kind === 'plugin')
        .map(show),
    )
    expect(found).toEqual([])
  })

  it('a plugin imports nothing of the kernel, and of another plugin only types from its src/api.ts', () => {
    const found = plugins.flatMap((plugin) =>
      pluginFiles(join(PLUGINS_DIR, plugin)).flatMap((file) => pluginViolations(plugin, file)),
    )
    // The examples are plugins written outside the tree: the same rules, every built-in plugin being "another".
    const examples = join(REPO_ROOT, 'examples')
    const fromExamples = folders(examples).flatMap((example) =>
      pluginFiles(join(examples, example)).flatMap((file) => pluginViolations('', file)),
    )
    expect([...found, ...fromExamples]).toEqual([])
  })

  it("a plugin's src/api.ts holds types only", () => {
    const found = plugins.flatMap((plugin) => {
      const api = join(PLUGINS_DIR, plugin, 'src', 'api.ts')
      try {
        return apiViolations(api)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
        throw err
      }
    })
    expect(found).toEqual([])
  })
})
