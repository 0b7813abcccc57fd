import { PackageErrors } from './errors.ts'

/**
 * Debian's package-name rules (policy 5.6.1: lowercase letters, digits, "+", "-", ".", at least two characters,
 * starting with a letter or digit) plus an optional ":arch". The root helper applies the same rules again; this
 * copy gives the socket a clear 400 before anything reaches it.
 */
export const PACKAGE_NAME = /^[a-z0-9][a-z0-9+.-]+(:[a-z0-9]+(-[a-z0-9]+)*)?$/
export const MAX_NAME_LENGTH = 128

/** Why `name` is refused, or null when it is a name apt can only read as that package. */
export function packageNameProblem(name: unknown): string | null {
  if (typeof name !== 'string' || name.length === 0) return 'a package name must be a non-empty string'
  if (name.length > MAX_NAME_LENGTH) return `a package name has at most ${MAX_NAME_LENGTH} characters`
  if (name.startsWith('-')) return `"${printable(name)}" starts with "-": apt would read it as an option`
  if (/[+-]$/.test(name.split(':')[0]!))
    return `"${printable(name)}" ends with "+" or "-": apt would read it as install or remove`
  if (/[?~]/.test(name)) return `"${printable(name)}" holds "?" or "~": apt would read it as a search pattern`
  if (/[=/]/.test(name))
    return `"${printable(name)}" holds "=" or "/": apt would read it as a version, a release or a file`
  if (!PACKAGE_NAME.test(name))
    return `"${printable(name)}" is not a Debian package name (lowercase letters, digits, "+", "-", "." and an optional ":arch")`
  return null
}

export function checkPackageNames(names: unknown[]): string[] {
  for (const name of names) {
    const problem = packageNameProblem(name)
    if (problem) throw PackageErrors.invalidName(problem)
  }
  return names as string[]
}

/** The name as a message may show it: control characters escaped, cut to 64 characters. */
function printable(name: string): string {
  return JSON.stringify(name.slice(0, 64)).slice(1, -1)
}
