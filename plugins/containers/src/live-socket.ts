/**
 * `/api/containers/live` (viewer): what the container list and the overview card keep live through one socket.
 *
 * Server to client, JSON text messages:
 *   {type: "ready"}                                   subscribed to the engine's events
 *   {type: "change", id, action, state?, health?}     a container event (state: the state the action leaves;
 *                                                      action "connected" with id "": events may have been missed,
 *                                                      read the list again)
 *   {type: "stats", items: [{id, cpuPercent, memoryBytes, memoryLimitBytes}]}   every 2 s, for the ids asked
 * Client to server: {stats: [container ids]} (full ids, at most 200: the rows a page shows), again whenever that
 * set changes; [] stops the sampling.
 */
import type { SocketRegistrar } from '@hostd/sdk'
import { sendJson, Type } from '@hostd/sdk'
import { Value } from '@sinclair/typebox/value'
import type { Runtime } from './service.ts'

export const LIVE_STATS_MS = 2_000
/** A client that has not read this much is sent no stats until it has (changes are always sent: they are small). */
const HIGH_WATER = 256 * 1024

export const LiveRequestSchema = Type.Object(
  { stats: Type.Array(Type.String({ pattern: '^[0-9a-f]{64}$' }), { maxItems: 200, uniqueItems: true }) },
  { additionalProperties: false },
)

export function liveSocket(s: SocketRegistrar, rt: Runtime): void {
  s.ws('/api/containers/live', { role: 'viewer' }, (socket, ctx) => {
    // Closed before it was handed over (a page left at once): an 'abort' listener added now would never run.
    if (ctx.signal.aborted) return
    let ids: string[] = []
    let sampling = false
    const unsubscribe = rt.live.subscribe((change) => {
      if (change.action === 'connected') sendJson(socket, { type: 'change', id: '', action: 'connected' })
      else sendJson(socket, { type: 'change', ...change })
    })
    const tick = async () => {
      if (sampling || ids.length === 0 || socket.bufferedAmount > HIGH_WATER) return
      sampling = true
      try {
        const items = await rt.live.sample(ids)
        if (!ctx.signal.aborted) sendJson(socket, { type: 'stats', items })
      } finally {
        sampling = false
      }
    }
    const timer = setInterval(() => void tick(), LIVE_STATS_MS)
    ctx.signal.addEventListener(
      'abort',
      () => {
        clearInterval(timer)
        unsubscribe()
      },
      { once: true },
    )
    socket.on('message', (data) => {
      let message: unknown
      try {
        message = JSON.parse(data.toString())
      } catch {
        message = null
      }
      if (!Value.Check(LiveRequestSchema, message)) {
        sendJson(socket, {
          type: 'error',
          error: 'HOSTD_CONTAINERS_LIVE_REQUEST_INVALID',
          message: 'Send {"stats": [full container ids]} (at most 200)',
        })
        return
      }
      ids = message.stats
      // The first figures at once (memory; CPU needs a second reading), not two seconds later.
      void tick()
    })
    sendJson(socket, { type: 'ready' })
  })
}
