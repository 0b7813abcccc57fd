/**
 * The forwarder inside a test browser's network namespace (test/support/browser-netns.ts starts it with
 * `ip netns exec <namespace> node netns-forwarder.ts`). For each line `forward <port> <socket path>` on stdin it listens
 * on 127.0.0.1:<port> in the namespace and joins each connection to the Unix socket at that path, which the test
 * process serves from the machine's own namespace (a socket path reaches across namespaces; a TCP port does not). It
 * answers `ok <port>` or `error <port> <why>` on stdout, and exits when stdin closes, so it never outlives the test
 * process that started it.
 */
import { createConnection, createServer, type Socket } from 'node:net'
import { createInterface } from 'node:readline'

/**
 * Pipes two sockets into each other. An end on one side ends the other once it has sent what it holds (a half-close
 * goes through as one); an error on one side destroys the other, and a reset of the browser's side goes back to it as
 * a reset.
 */
function join(browserSide: Socket, hostSide: Socket): void {
  browserSide.pipe(hostSide)
  hostSide.pipe(browserSide)
  browserSide.on('error', () => hostSide.destroy())
  hostSide.on('error', () => browserSide.resetAndDestroy())
  browserSide.on('close', () => hostSide.end())
  hostSide.on('close', () => browserSide.end())
}

const reply = (line: string) => process.stdout.write(`${line.replace(/\s+/g, ' ')}\n`)

createInterface({ input: process.stdin })
  .on('line', (line) => {
    const [verb, portText = '', path = ''] = line.split(' ')
    const port = Number(portText)
    if (verb !== 'forward' || !Number.isInteger(port) || port <= 0 || port > 65535 || !path.startsWith('/'))
      return reply(`error ${portText} bad request: ${line}`)
    const server = createServer({ allowHalfOpen: true, noDelay: true }, (client) =>
      join(client, createConnection({ path, allowHalfOpen: true })),
    )
    server.once('error', (err) => reply(`error ${port} ${err.message}`))
    server.listen(port, '127.0.0.1', () => reply(`ok ${port}`))
  })
  .on('close', () => process.exit(0))
