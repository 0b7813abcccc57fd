/**
 * Every error code a client can get is documented (Fastify has the same test for its FST_ERR_* codes): each
 * `HOSTD_*` code the source declares (defineError, a HostdError or ApiError built with a literal code, a socket's
 * close with its fallback code, the root helper's refusals) must appear in a Markdown file of the repository: the
 * error table of docs/API.md, or the README of the plugin or the helper that answers it.
 */
import { describe, expect, it } from 'vitest'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { REPO_ROOT } from './support/daemon.ts'

const SOURCE_ROOTS = ['kernel/src', 'sdk/src', 'ui/src', 'plugins', 'examples', 'helper']
const SKIP_DIRS = new Set(['node_modules', 'dist', 'test', '__pycache__'])

function files(dir: string, keep: (name: string) => boolean): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.isDirectory())
      return SKIP_DIRS.has(entry.name) || entry.name.startsWith('.') ? [] : files(join(dir, entry.name), keep)
    return keep(entry.name) ? [join(dir, entry.name)] : []
  })
}

/** The forms that give a client a code; a line of a comment is not a declaration. */
const DECLARATIONS = [
  /defineError\(\s*'(HOSTD_[A-Z0-9_]+)'/g,
  /new HostdError\(\s*'(HOSTD_[A-Z0-9_]+)'/g,
  /new ApiError\([^,]+,\s*'(HOSTD_[A-Z0-9_]+)'/g,
  /close\w*WithError\([^)]*'(HOSTD_[A-Z0-9_]+)'/g,
  /\b\d{3},\s*'(HOSTD_[A-Z0-9_]+)',?\s*\)/g, // the helper's Refused(message, status, code)
]

function declaredCodes(): Map<string, string> {
  const codes = new Map<string, string>()
  const sources = SOURCE_ROOTS.flatMap((root) =>
    files(join(REPO_ROOT, root), (name) => /\.(ts|tsx|py)$/.test(name) && !/\.test\.tsx?$/.test(name)),
  )
  for (const file of sources) {
    // Whole files, not lines: the formatter puts a long call's arguments on lines of their own.
    const code = readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => !/^\s*(\/?\*|\/\/|#)/.test(line))
      .join('\n')
    for (const pattern of DECLARATIONS)
      for (const match of code.matchAll(pattern)) codes.set(match[1]!, relative(REPO_ROOT, file))
  }
  return codes
}

describe('error codes', () => {
  it('finds the codes the source declares (the scan itself works)', () => {
    const codes = declaredCodes()
    for (const known of [
      'HOSTD_AUTH_REQUIRED',
      'HOSTD_AUTH_REAUTH_REQUIRED',
      'HOSTD_TOKENS_TOO_MANY',
      'HOSTD_HELPER_UNKNOWN_ACTION',
      'HOSTD_CONTAINERS_INTERNAL',
    ]) {
      expect(codes.has(known), known).toBe(true)
    }
    expect(codes.size).toBeGreaterThan(150)
  })

  it('documents every one of them in a Markdown file', () => {
    const docs = [
      join(REPO_ROOT, 'README.md'),
      ...['docs', 'plugins', 'helper', 'sdk', 'examples'].flatMap((root) =>
        files(join(REPO_ROOT, root), (name) => name.endsWith('.md')),
      ),
    ]
      .map((file) => readFileSync(file, 'utf8'))
      .join('\n')
    const missing = [...declaredCodes()]
      .filter(([code]) => !new RegExp(`\\b${code}\\b`).test(docs))
      .map(([code, file]) => `${code} (${file})`)
    expect(missing, 'codes named in no Markdown file').toEqual([])
  })
})
