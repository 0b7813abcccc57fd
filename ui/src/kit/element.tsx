import { render, type ComponentType } from 'preact'
import type { PageContext } from './context.ts'

/** An element the shell mounts: it receives `context` before it is connected. */
export interface HostdElement extends HTMLElement {
  context: PageContext
}

/** Render roots made here so far: each gets its own number for useId (see connectedCallback). */
let roots = 0

/**
 * Defines a custom element that renders a Preact component with `{ ctx }` into itself (light DOM, so the kit's
 * styles apply), and unmounts it when removed. For pages and cards written with the kit:
 *
 *   defineElement('metrics-live', ({ ctx }) => <LiveCharts ctx={ctx} />)
 *
 * A tag that is already defined is left alone (a second load of the same module).
 */
export function defineElement(tag: string, Component: ComponentType<{ ctx: PageContext }>): void {
  if (customElements.get(tag)) return
  customElements.define(
    tag,
    class extends HTMLElement implements HostdElement {
      context!: PageContext
      connectedCallback() {
        // Every element is a render root of its own, and Preact's useId numbers ids per root ("P0-0", "P0-1"...),
        // so the shell's ids and a page's would collide (a label or aria-labelledby naming the wrong element).
        // A root whose vnode carries its own mask (`__m`, Preact's name for it) numbers its ids "P<n>-0"... instead.
        const root = <Component ctx={this.context} />
        ;(root as unknown as { __m: [number, number] }).__m = [++roots, 0]
        render(root, this)
      }
      disconnectedCallback() {
        render(null, this)
      }
    },
  )
}
