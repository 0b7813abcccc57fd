import { readFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'

/** The commit this daemon runs, read from the checkout's .git (no process is spawned); HOSTD_COMMIT wins. */
export function readCommit(repoRoot: string, env = process.env): string {
  if (env.HOSTD_COMMIT) return env.HOSTD_COMMIT
  try {
    const gitDir = join(repoRoot, '.git')
    const head = readFileSync(join(gitDir, 'HEAD'), 'utf8').trim()
    if (!head.startsWith('ref: ')) return head
    const ref = head.slice(5)
    const loose = join(gitDir, ref)
    if (existsSync(loose)) return readFileSync(loose, 'utf8').trim()
    const packed = readFileSync(join(gitDir, 'packed-refs'), 'utf8')
    return (
      packed
        .split('\n')
        .find((line) => line.endsWith(` ${ref}`))
        ?.split(' ')[0] ?? 'unknown'
    )
  } catch {
    return 'unknown'
  }
}

export function readVersion(repoRoot: string): string {
  return (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version
}
