/** A test kernel with the containers plugin pointed at a test engine, and small helpers for the tests. */
import type { HostdPlugin } from '@hostd/sdk'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import WebSocket from 'ws'
import containers from '../../src/index.ts'

/** `overNetwork`: every `inject` goes over a real HTTP connection; `plugins`: more plugins next to this one. */
export async function kernelFor(dockerHost: string, env: Record<string, string> = {}, options: { overNetwork?: boolean; plugins?: HostdPlugin[] } = {}): Promise<TestKernel> {
  return startTestKernel({ plugins: [containers, ...(options.plugins ?? [])], listen: true, overNetwork: options.overNetwork, env: { DOCKER_HOST: dockerHost, ...env } })
}

export interface SocketSession {
  messages: any[]
  closed: Promise<{ code: number; reason: string }>
  ws: WebSocket
  /** Resolves with the first message matching `pred` (already received or still to come). */
  waitFor(pred: (m: any) => boolean): Promise<any>
}

/** Opens a socket as `token`, sends `first` (if given) once open, collects JSON messages. */
export function openSocket(t: TestKernel, path: string, token: string, first?: unknown, headers: Record<string, string> = {}): SocketSession {
  const ws = new WebSocket(`${t.url!.replace(/^http/, 'ws')}${path}`, { headers: { authorization: `Bearer ${token}`, ...headers } })
  const messages: any[] = []
  const waiters: { pred: (m: any) => boolean; resolve: (m: any) => void }[] = []
  ws.on('open', () => {
    if (first !== undefined) ws.send(typeof first === 'string' ? first : JSON.stringify(first))
  })
  ws.on('message', (data: Buffer) => {
    const m = JSON.parse(data.toString('utf8'))
    messages.push(m)
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

/** Polls `fn` until it returns a truthy value (no timing asserted: the test's own timeout bounds it). */
export async function eventually<T>(fn: () => Promise<T | null | undefined | false>, everyMs = 100): Promise<T> {
  for (;;) {
    const v = await fn()
    if (v) return v
    await new Promise((r) => setTimeout(r, everyMs))
  }
}

export async function auditActions(t: TestKernel): Promise<{ action: string; target: string; result: string; username: string | null; detail: any }[]> {
  const res = await t.inject({ url: '/api/audit?range=all&limit=500', as: 'admin' })
  return res.json().items
}
