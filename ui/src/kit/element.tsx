import { render, type ComponentType } from 'preact'
import type { PageContext } from './context.ts'
import { IdPrefix, nextIdPrefix } from './ids.ts'

/** An element the shell mounts: it receives `context` before it is connected. */
export interface HostdElement extends HTMLElement {
  context: PageContext
}

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
        // A root of its own: its ids get a prefix of their own (see ids.ts).
        render(
          <IdPrefix.Provider value={nextIdPrefix()}>
            <Component ctx={this.context} />
          </IdPrefix.Provider>,
          this,
        )
      }
      disconnectedCallback() {
        render(null, this)
      }
    },
  )
}
