// The starter plugin's page: a plain JavaScript ES module, shipped as is. `preact`, `htm/preact` and the kit
// (`@hostd/ui`) come from the dashboard's import map; tsc checks this file against the kit's types
// (tsconfig.json maps `@hostd/ui` to the types the sdk package carries).
import { render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { html } from 'htm/preact'
import { Async, Button, Card, KeyValues, PageHeader, useResource } from '@hostd/ui'

/** @typedef {import('@hostd/ui').PageContext} PageContext */

/** @param {{ ctx: PageContext }} props */
function Starter({ ctx }) {
  const [reload, setReload] = useState(0)
  const [live, setLive] = useState(/** @type {{ count: number, by: string | null } | null} */ (null))
  const count = useResource((signal) => ctx.api.get('/api/starter', { signal }), [reload])
  useEffect(() => {
    const ws = ctx.socket('/api/starter/live?every=1000')
    ws.onmessage = (e) => setLive(JSON.parse(String(e.data)))
    return () => ws.close()
  }, [])
  const bump = async () => {
    await ctx.api.post('/api/starter/bump')
    setReload((n) => n + 1)
  }
  return html`
    <${PageHeader} title="Starter" description="A counter: a route, a live socket, a page and a card." />
    <div class="stack">
      <${Card} title="Count">
        <${Async} resource=${count} label="Counting…">
          ${(/** @type {{ count: number }} */ data) => html`<p>Count: <strong>${data.count}</strong></p>`}
        </${Async}>
        ${ctx.can('operator') ? html`<${Button} icon="plus" onClick=${bump}>Bump</${Button}>` : null}
      </${Card}>
      <${Card} title="Live">
        <${KeyValues} items=${[
          ['Live count', live ? String(live.count) : '…'],
          ['Last bumped by', live?.by ?? 'nobody'],
        ]} />
      </${Card}>
    </div>`
}

class StarterPage extends HTMLElement {
  /** @type {PageContext | undefined} set by the dashboard before it connects the element */
  context
  connectedCallback() {
    render(html`<${Starter} ctx=${/** @type {PageContext} */ (this.context)} />`, this)
  }
  disconnectedCallback() {
    render(null, this)
  }
}

if (!customElements.get('starter-page')) customElements.define('starter-page', StarterPage)
