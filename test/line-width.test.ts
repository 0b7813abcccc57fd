/**
 * No source line is wider than 160 characters. The formatter (biome.json) wraps code at 120 columns but leaves long
 * strings, template literals and comments alone; past 160 they are split (a concatenation or shorter wording), so
 * every line can be read without scrolling sideways. Generated files (`*.generated.ts`) are exempt.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { REPO_ROOT } from './support/daemon.ts'

const MAX_WIDTH = 160
const SOURCE = /\.(ts|tsx|mjs|js|css)$/
const GENERATED = /\.generated\.ts$/

/** The repository's files (tracked, and new ones not ignored), as git lists them. */
function repositoryFiles(): string[] {
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
  return [...new Set(listed.split('\0'))].filter((path) => path !== '')
}

/** `file:line (width)` for each line of the given files wider than MAX_WIDTH characters (code points). */
function tooWide(root: string, paths: string[]): string[] {
  const found: string[] = []
  for (const path of paths) {
    if (!SOURCE.test(path) || GENERATED.test(path)) continue
    const file = join(root, path)
    if (!existsSync(file)) continue // deleted in the working tree, not yet in the index
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        const width = [...line].length
        if (width > MAX_WIDTH) found.push(`${path}:${i + 1} (${width})`)
      })
  }
  return found
}

describe('line width', () => {
  it(`keeps every source line within ${MAX_WIDTH} characters`, () => {
    const files = repositoryFiles()
    expect(files.length).toBeGreaterThan(100) // git answered with the repository, not an empty list
    expect(tooWide(REPO_ROOT, files)).toEqual([])
  })

  it('reports a line one character too wide, and only source files that are not generated', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hostd-line-width-'))
    try {
      const wide = `const s = '${'x'.repeat(MAX_WIDTH - 11)}'` // 161 characters
      const fits = `// ${'é'.repeat(MAX_WIDTH - 3)}` // 160 characters, more bytes
      for (const name of ['a.ts', 'b.generated.ts', 'c.md']) writeFileSync(join(dir, name), `${fits}\n${wide}\n`)
      expect(tooWide(dir, ['a.ts', 'b.generated.ts', 'c.md', 'gone.ts'])).toEqual([`a.ts:2 (${MAX_WIDTH + 1})`])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
