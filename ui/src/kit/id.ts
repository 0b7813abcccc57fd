import { useState } from 'preact/hooks'

let next = 0

/**
 * An element id unique in the whole document, for label/aria references. Preact's `useId` counts per render
 * root, and the shell and every plugin element are separate roots, so their ids collide (a plugin page's first
 * field and the shell's confirmation dialog both got `P0-1`, and the dialog was named by the field's label).
 */
export function useUniqueId(): string {
  const [id] = useState(() => `h-${(++next).toString(36)}`)
  return id
}
