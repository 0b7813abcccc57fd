/**
 * The list's and the overview card's live link to the daemon (`/api/containers/live`, see src/live-socket.ts): the
 * engine's container events as they happen, and CPU and memory of the running containers a page shows. The socket is
 * opened again after a drop (2 s, then up to 30 s apart), and every reconnection reads the list again.
 */
import { type ReadonlySignal, useSignal } from '@preact/signals'
import { useEffect, useRef } from 'preact/hooks'
import type { PageContext } from '@hostd/ui'

import type { LiveChange, LiveStats } from '../../src/adapters/live.ts'

export type { LiveChange, LiveStats }

type Message = { type: 'ready' } | ({ type: 'change' } & LiveChange) | { type: 'stats'; items: LiveStats[] }

/** A container that should be up and is not: a restart policy that keeps it running, or hostd's auto-start. */
export function shouldRun(c: { state: string; restartPolicy: string; autoStart: boolean }): boolean {
  const keep = c.autoStart || c.restartPolicy === 'always' || c.restartPolicy === 'unless-stopped'
  return keep && c.state !== 'running' && c.state !== 'paused'
}

/**
 * Calls `onChange` for every container event (action "connected" after a reconnection: read everything again) and
 * answers the latest CPU and memory of `statsIds` (full ids of running containers the page shows; at most 200) as a
 * signal: only the cells that read it draw again every 2 s, not the table (nor its sort).
 */
export function useContainersLive(
  ctx: PageContext,
  onChange: (change: LiveChange) => void,
  statsIds: readonly string[] = [],
): ReadonlySignal<ReadonlyMap<string, LiveStats>> {
  const stats = useSignal<ReadonlyMap<string, LiveStats>>(new Map())
  const changed = useRef(onChange)
  changed.current = onChange
  const wanted = useRef<readonly string[]>(statsIds)
  const socketRef = useRef<WebSocket | null>(null)
  const key = statsIds.join(',')

  useEffect(() => {
    let closed = false
    let retry: ReturnType<typeof setTimeout> | undefined
    let delay = 2_000
    let opened = false
    const open = () => {
      if (closed || ctx.signal.aborted) return
      const ws = ctx.socket('/api/containers/live')
      socketRef.current = ws
      ws.onmessage = (e) => {
        let m: Message
        try {
          m = JSON.parse(String(e.data)) as Message
        } catch {
          return
        }
        if (m.type === 'ready') {
          delay = 2_000
          if (wanted.current.length && document.visibilityState === 'visible')
            ws.send(JSON.stringify({ stats: wanted.current.slice(0, 200) }))
          // After a drop: what happened meanwhile was not heard.
          if (opened) changed.current({ id: '', action: 'connected' })
          opened = true
        } else if (m.type === 'change') changed.current(m)
        else if (m.type === 'stats') stats.value = new Map(m.items.map((s) => [s.id, s]))
      }
      ws.onclose = () => {
        if (socketRef.current === ws) socketRef.current = null
        if (closed || ctx.signal.aborted) return
        retry = setTimeout(open, delay)
        delay = Math.min(delay * 2, 30_000)
      }
    }
    open()
    return () => {
      closed = true
      clearTimeout(retry)
      socketRef.current?.close()
      socketRef.current = null
    }
  }, [])

  // The ids asked for: none while the tab is hidden (nobody looks: the daemon reads nothing for it).
  useEffect(() => {
    wanted.current = statsIds
    const send = () => {
      const ws = socketRef.current
      const ids = document.visibilityState === 'visible' ? statsIds.slice(0, 200) : []
      if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ stats: ids }))
    }
    send()
    if (statsIds.length === 0) stats.value = new Map()
    document.addEventListener('visibilitychange', send)
    return () => document.removeEventListener('visibilitychange', send)
  }, [key])

  return stats
}

/**
 * Calls `fn` at most once per `ms` (the last call wins, run at the end of the wait): a burst of events (a restart is
 * kill, die, start) reads the list once.
 */
export function useDebounced(fn: () => void, ms: number): () => void {
  const latest = useRef(fn)
  latest.current = fn
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined)
  useEffect(() => () => clearTimeout(timer.current), [])
  return useRef(() => {
    clearTimeout(timer.current)
    timer.current = setTimeout(() => latest.current(), ms)
  }).current
}
