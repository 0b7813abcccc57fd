import { access } from 'node:fs/promises'
import type { Condition } from './plugin.ts'

/** Met when `path` exists (Cockpit's `path-exists`). */
export function pathExists(path: string, reason = `${path} is missing`): Condition {
  return {
    name: `path-exists:${path}`,
    check: () =>
      access(path).then(
        () => true as const,
        () => reason,
      ),
  }
}
