/**
 * What the tests of "sockets and streams end with their session or token" open over real connections: a probe
 * plugin (sockets of each role, one socket only a session may open, a stream that ignores every signal, plain routes),
 * and clients for its sockets and streams. No timing is asserted: each wait is bounded only so a failure is reported
 * instead of hanging.
 */
import { request } from 'node:http'
import WebSocket from 'ws'
import { definePlugin, Type, type HostdPlugin } from '@hostd/sdk'

/** Bound on every wait: far above the one second the rule promises, so a loaded machine does not fail it. */
export const WAIT_MS = 8000

/** Client ends of everything opened, for `closeClients` after the tests so the kernel can shut down. */
const clientEnds: (() => void)[] = []
export const closeClients = () => clientEnds.splice(0).forEach((end) => end())

export function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout
  const timeout = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${WAIT_MS} ms`)), WAIT_MS)),
  )
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/**
 * `/api/<id>/drip` (operator): a stream that ignores its signals and never ends by itself (the kernel must cut it);
 * `/api/<id>/read` (viewer) and `/api/<id>/write` (operator): plain routes; sockets `/api/<id>/viewer`,
 * `/api/<id>/operator` and `/api/<id>/interactive` (viewer, `sessionOnly`), each echoing what it gets after "ready".
 * The tag of every socket or stream whose signal (`ctx.signal`, `lifetime`) fired is added to `aborted`.
 */
export function probePlugin(id: string, aborted: Set<string>): HostdPlugin {
  return definePlugin({
    id,
    version: '1.0.0',
    kernel: '^1.0.0',
    routes: (r) => {
      r.get(
        `/api/${id}/drip`,
        { role: 'operator', schema: { querystring: Type.Object({ tag: Type.String() }) } },
        (req, reply) => {
          req.lifetime.addEventListener('abort', () => aborted.add(req.query.tag))
          reply.hijack()
          reply.raw.writeHead(200, { 'content-type': 'text/plain' })
          reply.raw.write('start\n')
          const timer = setInterval(() => reply.raw.write('.'), 100)
          reply.raw.once('close', () => clearInterval(timer))
        },
      )
      r.get(`/api/${id}/read`, { role: 'viewer' }, (req) => ({ read: true, apiToken: req.apiToken?.name ?? null }))
      r.post(`/api/${id}/write`, { role: 'operator' }, () => ({ written: true }))
    },
    sockets: (s) => {
      const echo = (tag: string, signal: AbortSignal, socket: WebSocket) => {
        signal.addEventListener('abort', () => aborted.add(tag))
        socket.on('message', (data: Buffer) => socket.send(data.toString()))
        socket.send('ready')
      }
      const Query = Type.Object({ tag: Type.String() })
      for (const role of ['viewer', 'operator'] as const)
        s.ws(`/api/${id}/${role}`, { role, query: Query }, (socket, ctx) => echo(ctx.query.tag, ctx.signal, socket))
      s.ws(`/api/${id}/interactive`, { role: 'viewer', sessionOnly: true, query: Query }, (socket, ctx) =>
        echo(ctx.query.tag, ctx.signal, socket),
      )
    },
  })
}

export interface OpenSocket {
  ws: WebSocket
  closed: Promise<{ code: number; reason: string }>
  isOpen(): boolean
  echo(text: string): Promise<string>
}

/** A socket of the probe as `token` (a session or an API token), once it said "ready". */
export async function openSocket(base: string, path: string, token: string): Promise<OpenSocket> {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}${path}`, { headers: { authorization: `Bearer ${token}` } })
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  )
  clientEnds.push(() => ws.terminate())
  await within(
    new Promise<void>((resolve, reject) => {
      ws.once('message', () => resolve())
      ws.once('error', reject)
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)))
    }),
    `socket ${path} ready`,
  )
  return {
    ws,
    closed,
    isOpen: () => ws.readyState === WebSocket.OPEN,
    echo: (text) =>
      within(
        new Promise<string>((resolve) => {
          ws.once('message', (data: Buffer) => resolve(data.toString()))
          ws.send(text)
        }),
        'echo',
      ),
  }
}

/** How an upgrade as `token` is answered: 101 when it opened (then closed again), else the status and error code. */
export function upgrade(base: string, path: string, token: string): Promise<{ status: number; error?: string }> {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}${path}`, { headers: { authorization: `Bearer ${token}` } })
  clientEnds.push(() => ws.terminate())
  return within(
    new Promise((resolve, reject) => {
      ws.once('open', () => {
        ws.close()
        resolve({ status: 101 })
      })
      ws.once('unexpected-response', (_req, res) => {
        let body = ''
        res.on('data', (c: Buffer) => (body += c.toString()))
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, error: (JSON.parse(body || '{}') as { error?: string }).error }),
        )
      })
      ws.once('error', (err) => (ws.readyState === WebSocket.CLOSED ? undefined : reject(err)))
    }),
    `upgrade ${path}`,
  )
}

export interface OpenStream {
  /** Resolves when the server ends or cuts the response. */
  ended: Promise<void>
  isOpen(): boolean
}

/** A long-lived GET over a real connection; resolves once the first bytes arrived. */
export async function openStream(base: string, path: string, token: string): Promise<OpenStream> {
  let open = true
  let markEnded!: () => void
  const ended = new Promise<void>(
    (resolve) =>
      (markEnded = () => {
        open = false
        resolve()
      }),
  )
  await within(
    new Promise<void>((resolve, reject) => {
      const req = request(new URL(path, base), { headers: { authorization: `Bearer ${token}` } }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`stream ${path}: ${res.statusCode}`))
        res.once('data', () => resolve())
        res.on('data', () => undefined)
        res.once('end', markEnded)
        res.once('close', markEnded)
        res.once('error', markEnded)
      })
      clientEnds.push(() => req.destroy())
      req.once('error', (err) => (open ? reject(err) : markEnded()))
      req.end()
    }),
    `stream ${path} open`,
  )
  return { ended, isOpen: () => open }
}
