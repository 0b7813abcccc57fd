/**
 * A WebSocket to a test kernel that collects JSON messages, for tests of live-output sockets (exported by
 * `@hostd/sdk/testing`). It uses `ws` (which reports the HTTP status of a refused upgrade) and vitest's `onTestFailed`
 * (a failed test prints what its socket had received, and when): optional peers of the sdk, as the kernel is.
 */
import type { TestKernel } from '@hostd/kernel/testing'
import { onTestFailed } from 'vitest'
import WebSocket from 'ws'

/** A parsed JSON message: loose on purpose, so a test reads `m.type` without narrowing first. */
// biome-ignore lint/suspicious/noExplicitAny: test code reads arbitrary message shapes
export type SocketMessage = any

export interface SocketSession {
  messages: SocketMessage[]
  /** The close code and reason, or the HTTP status of a refused upgrade (reason "http"). */
  closed: Promise<{ code: number; reason: string }>
  ws: WebSocket
  /** Resolves with the first message matching `pred` (already received or still to come). */
  waitFor(pred: (m: SocketMessage) => boolean): Promise<SocketMessage>
}

/** Opens a socket as `token`, sends `first` (if given) once open, collects JSON messages. */
export function openSocket(
  t: TestKernel,
  path: string,
  token: string,
  first?: unknown,
  headers: Record<string, string> = {},
): SocketSession {
  const ws = new WebSocket(`${t.url!.replace(/^http/, 'ws')}${path}`, {
    headers: { authorization: `Bearer ${token}`, ...headers },
  })
  const messages: SocketMessage[] = []
  const opened = Date.now()
  const arrivals: number[] = [] // when each of `messages` came
  // A test that fails (a timeout above all) says what its socket had received by then, and when.
  try {
    onTestFailed(() => {
      const last = messages
        .map((m, i) => `+${((arrivals[i]! - opened) / 1000).toFixed(1)}s ${JSON.stringify(m).slice(0, 200)}`)
        .slice(-20)
      const head = `socket ${path} of the failed test, opened ${new Date(opened).toISOString()}, state ${ws.readyState}`
      process.stderr.write(`\n--- ${head}:\n${last.join('\n') || '(no message)'}\n---\n`)
    })
  } catch {
    /* not inside a test */
  }
  const waiters: { pred: (m: SocketMessage) => boolean; resolve: (m: SocketMessage) => void }[] = []
  ws.on('open', () => {
    if (first !== undefined) ws.send(typeof first === 'string' ? first : JSON.stringify(first))
  })
  ws.on('message', (data: Buffer) => {
    const m = JSON.parse(data.toString('utf8'))
    messages.push(m)
    arrivals.push(Date.now())
    for (const w of [...waiters]) {
      if (w.pred(m)) {
        waiters.splice(waiters.indexOf(w), 1)
        w.resolve(m)
      }
    }
  })
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }))
    ws.on('error', () => undefined)
    ws.on('unexpected-response', (_req, res) => resolve({ code: res.statusCode ?? 0, reason: 'http' }))
  })
  return {
    messages,
    closed,
    ws,
    waitFor: (pred) => {
      const found = messages.find(pred)
      if (found) return Promise.resolve(found)
      return new Promise((resolve) => waiters.push({ pred, resolve }))
    },
  }
}
