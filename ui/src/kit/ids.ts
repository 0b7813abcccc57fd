/**
 * Ids unique in the whole document. Preact numbers `useId` per render root, and every plugin element is a root of
 * its own beside the shell's, so plain `useId` gives each of them the same ids ("P0-0"...): a field's
 * `<label for>` or a dialog's `aria-labelledby` then points at another root's element. `defineElement` gives each
 * element's root a prefix of its own; kit components and pages take ids from `useUniqueId`.
 */
import { createContext } from 'preact'
import { useContext, useId } from 'preact/hooks'

export const IdPrefix = createContext('')

let roots = 0

/** A prefix for a new render root's ids. */
export function nextIdPrefix(): string {
  return `e${++roots}-`
}

/** `useId`, unique across the render roots of the document. */
export function useUniqueId(): string {
  return useContext(IdPrefix) + useId()
}
