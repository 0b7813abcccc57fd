/**
 * The plugin contract's record: the public types of `@hostd/sdk` (the declarations TypeScript emits for
 * sdk/src/index.ts and the sdk modules it reaches, comments stripped) and the KERNEL_API_VERSION they belong to.
 * sdk/contract.test.ts fails when the types change and the version does not. `@hostd/sdk/testing` (the test harness)
 * is not part of it, nor are the packages the sdk re-exports (TypeBox's `Type`, MikroORM's `defineEntity`).
 *
 *   npm run contract:record                  record the surface for the current KERNEL_API_VERSION
 *   npm run contract:record -- --same-version  record a changed surface under the same version: only when no plugin
 *                                             can tell (the declarations print differently after a TypeScript upgrade)
 */
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import ts from 'typescript'
import { KERNEL_API_VERSION } from './src/index.ts'

const SDK = import.meta.dirname
const SOURCES = join(SDK, 'src')
export const RECORD_FILE = join(SDK, 'contract.json')
/** The recorded surface itself, so a change shows as a diff in review and in the test's message. */
export const SURFACE_FILE = join(SDK, 'contract.surface.txt')
const CHANGELOG = join(SDK, 'CHANGELOG.md')
const RECORD_COMMAND = 'npm run contract:record'

export interface ContractRecord {
  version: string
  digest: string
}

/** The declarations a plugin author's compiler sees, one module after the other in name order. */
export function currentSurface(): string {
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2024,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    skipLibCheck: true,
    allowImportingTsExtensions: true,
    declaration: true,
    emitDeclarationOnly: true,
    removeComments: true,
    types: ['node'],
  }
  const program = ts.createProgram([join(SOURCES, 'index.ts')], options)
  const modules = new Map<string, string>()
  const { emitSkipped, diagnostics } = program.emit(undefined, (file, text) => {
    if (file.startsWith(`${SOURCES}/`)) modules.set(relative(SOURCES, file), text)
  })
  if (emitSkipped)
    throw new Error(`the sdk's declarations could not be emitted: ${diagnostics.map((d) => d.messageText)}`)
  return (
    [...modules.keys()]
      .sort()
      .map((name) => `// ${name}\n${modules.get(name)!.trim()}\n`)
      .join('\n')
      // The version's own value is not part of the surface: a new version alone changes nothing a plugin compiles.
      .replace(/KERNEL_API_VERSION = "[^"]*"/, 'KERNEL_API_VERSION: string')
  )
}

export const digestOf = (surface: string): string => `sha256:${createHash('sha256').update(surface).digest('hex')}`

export function readRecord(): ContractRecord | null {
  return existsSync(RECORD_FILE) ? (JSON.parse(readFileSync(RECORD_FILE, 'utf8')) as ContractRecord) : null
}

/** What is wrong between the recorded contract and the sdk as it is: nothing, or sentences saying what to do. */
export function contractProblems(recorded: ContractRecord | null, current: ContractRecord): string[] {
  if (!recorded) return [`sdk/contract.json is missing: run ${RECORD_COMMAND}`]
  const surfaceChanged = recorded.digest !== current.digest
  if (surfaceChanged && recorded.version === current.version) {
    return [
      `the public types of @hostd/sdk changed but KERNEL_API_VERSION is still ${current.version}: raise it in ` +
        'sdk/src/index.ts (the minor for an addition, the major for a break), say what changed in sdk/CHANGELOG.md, ' +
        `then run ${RECORD_COMMAND}`,
    ]
  }
  if (recorded.version !== current.version) {
    return [
      `KERNEL_API_VERSION is ${current.version} but sdk/contract.json records ${recorded.version}: ` +
        `run ${RECORD_COMMAND}${surfaceChanged ? '' : ' (the public types did not change: is the new version needed?)'}`,
    ]
  }
  return []
}

/** Whether sdk/CHANGELOG.md has a section for `version` (`## 1.1.0`, a date may follow). */
export function changelogHas(version: string): boolean {
  return new RegExp(`^## ${version.replaceAll('.', '\\.')}(?:\\s|$)`, 'm').test(readFileSync(CHANGELOG, 'utf8'))
}

function record(sameVersion: boolean): void {
  const surface = currentSurface()
  const current = { version: KERNEL_API_VERSION, digest: digestOf(surface) }
  const recorded = readRecord()
  const problems = contractProblems(recorded, current)
  if (problems.length === 0) {
    console.log(`sdk/contract.json already records ${current.version}`)
    return
  }
  if (recorded && recorded.version === current.version && !sameVersion) {
    console.error(`Not recorded: ${problems.join('; ')}`)
    process.exit(1)
  }
  if (!changelogHas(current.version)) {
    console.error(
      `Not recorded: sdk/CHANGELOG.md has no "## ${current.version}" section saying what this version changed`,
    )
    process.exit(1)
  }
  writeFileSync(RECORD_FILE, `${JSON.stringify(current, null, 2)}\n`)
  writeFileSync(SURFACE_FILE, surface)
  console.log(`Recorded the sdk's public types for kernel API ${current.version} (${current.digest})`)
}

if (import.meta.main) record(process.argv.includes('--same-version'))
