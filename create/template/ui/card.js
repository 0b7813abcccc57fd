// The starter plugin's overview card: a custom element like a page, shown on the dashboard's overview.
import { render } from 'preact'
import { html } from 'htm/preact'
import { Async, useResource } from '@hostd/ui'

/** @typedef {import('@hostd/ui').PageContext} PageContext */

/** @param {{ ctx: PageContext }} props */
function StarterCard({ ctx }) {
  const count = useResource((signal) => ctx.api.get('/api/starter', { signal }), [])
  return html`<${Async} resource=${count} label="Counting…">
    ${(/** @type {{ count: number }} */ data) => html`<p>Count: <strong>${data.count}</strong></p>`}
  </${Async}>`
}

class StarterCardElement extends HTMLElement {
  /** @type {PageContext | undefined} */
  context
  connectedCallback() {
    render(html`<${StarterCard} ctx=${/** @type {PageContext} */ (this.context)} />`, this)
  }
  disconnectedCallback() {
    render(null, this)
  }
}

if (!customElements.get('starter-card')) customElements.define('starter-card', StarterCardElement)
