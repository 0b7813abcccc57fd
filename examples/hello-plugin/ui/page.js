// The hello plugin's page: a plain JavaScript ES module, shipped as is (no build step). It defines the custom
// element named in the plugin's manifest. The shell sets `this.context` (the signed-in user, the API client,
// sockets, navigation, toasts...) before connecting it. `preact`, `htm/preact` and the kit (`@hostd/ui`) come from
// the dashboard's import map: the same copies the shell uses, so the page looks like every other page.
import { render } from 'preact'
import { useState } from 'preact/hooks'
import { html } from 'htm/preact'
import { Async, Badge, Button, Card, Form, PageHeader, TextField, useResource } from '@hostd/ui'

function Echo({ ctx }) {
  const [lines, setLines] = useState([])
  const [socket, setSocket] = useState(null)
  const connect = () => {
    const ws = ctx.socket(`/api/hello/echo?prefix=${encodeURIComponent('echo: ')}`)
    ws.onmessage = (e) => setLines((l) => [...l.slice(-19), String(e.data)])
    ws.onclose = () => setSocket(null)
    ws.onopen = () => setSocket(ws)
  }
  return html`
    <${Card} title="Echo socket">
      ${
        socket
          ? html`<${Form} label="Send a message" submitLabel="Send" onSubmit=${(v) => socket.send(v.message)}>
            <${TextField} name="message" label="Message" required />
          </${Form}>`
          : html`<${Button} icon="play" onClick=${connect}>Connect</${Button}>`
      }
      <ul aria-label="Echo replies" class="echo-lines">
        ${lines.map((line, i) => html`<li key=${i}>${line}</li>`)}
      </ul>
    </${Card}>`
}

function Hello({ ctx }) {
  const hello = useResource((signal) => ctx.api.get('/api/hello', { signal }), [])
  return html`
    <${PageHeader} title="Hello" description="An example page from a third-party plugin (examples/hello-plugin)." />
    <div class="stack">
      <${Card} title="Greeting">
        <${Async} resource=${hello} label="Asking the server…">
          ${(data) => html`<p>${data.message} <${Badge} tone="accent">${ctx.user.role}</${Badge}></p>`}
        </${Async}>
      </${Card}>
      <${Echo} ctx=${ctx} />
    </div>`
}

class HelloPage extends HTMLElement {
  connectedCallback() {
    render(html`<${Hello} ctx=${this.context} />`, this)
  }
  disconnectedCallback() {
    render(null, this)
  }
}

if (!customElements.get('hello-page')) customElements.define('hello-page', HelloPage)
