import { afterEach, describe, expect, it } from 'vitest'
import { createServer, get, type Server } from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import type { HelperClient, Logger } from '@hostd/sdk'
import { MetricsService } from '../src/service.ts'

/**
 * GET /api/metrics answers from the shared sampler's latest sample while it is at most one stream interval old,
 * and reads the host only when no sample is fresh. Time is a clock the test steps (no waiting, no timing
 * assertions); host readings are counted, from the recorded /proc tree in fixtures/.
 */
const FIXTURE = join(import.meta.dirname, 'fixtures', 'proc-sample')
const INTERVAL_MS = 2000

const log = {
  warn: () => undefined,
  error: () => undefined,
  info: () => undefined,
  debug: () => undefined,
} as unknown as Logger
const helper = {} as HelperClient

const services: MetricsService[] = []
afterEach(async () => {
  for (const s of services.splice(0)) await s.stop()
})

function service(stream: { intervalMs?: number } = {}) {
  let now = 100_000
  const s = new MetricsService({ log, helper, store: null }, { root: FIXTURE, clock: () => now, stream })
  services.push(s)
  const read = s.reader.read.bind(s.reader)
  const counter = { reads: 0 }
  s.reader.read = () => {
    counter.reads++
    return read()
  }
  return { s, counter, at: (ms: number) => void (now = ms), now: () => now }
}

describe('GET /api/metrics and the shared sampler', () => {
  it('answers from a sample at most one interval old, and takes one reading against the history baseline when none is', async () => {
    const { s, counter, at } = service()
    await s.start() // the history sampler's baseline reading
    expect(counter.reads).toBe(1)

    at(101_000)
    const first = await s.snapshot()
    expect(counter.reads).toBe(2) // one reading; its rates run against the baseline taken at start
    expect(first.intervalSeconds).toBe(1)

    at(101_000 + INTERVAL_MS) // exactly one interval old: still fresh
    expect(await s.snapshot()).toBe(first)
    expect(counter.reads).toBe(2)

    at(101_000 + INTERVAL_MS + 1) // older than the interval: one new reading, rates against the previous one
    const second = await s.snapshot()
    expect(second).not.toBe(first)
    expect(counter.reads).toBe(3)
    expect(second.intervalSeconds).toBeCloseTo(2, 2)
  })

  it('callers that arrive while a snapshot is taken share its one reading', async () => {
    const { s, counter, at } = service()
    await s.start()
    at(103_000)
    const answers = await Promise.all(Array.from({ length: 5 }, () => s.snapshot()))
    expect(counter.reads).toBe(2)
    for (const a of answers) expect(a).toBe(answers[0])
  })

  it('takes two readings only when no earlier reading can serve as the baseline', async () => {
    const { s, counter } = service() // not started: no history baseline
    await s.snapshot()
    expect(counter.reads).toBe(2)
  })

  describe('with the event stream running', () => {
    let server: Server | null = null
    afterEach(async () => {
      server?.closeAllConnections()
      if (server) await new Promise((r) => server!.close(r))
      server = null
    })

    it("answers with the stream's latest sample while it is fresh", async () => {
      // A short stream interval so the test gets its event quickly; freshness is judged on the stepped clock.
      const { s, counter, at, now } = service({ intervalMs: 500 })
      server = createServer((req, res) => s.stream(req, res, 1))
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
      const port = (server.address() as AddressInfo).port
      const body = await new Promise<string>((resolve, reject) => {
        get({ host: '127.0.0.1', port, path: '/' }, (res) => {
          let text = ''
          res
            .setEncoding('utf8')
            .on('data', (d: string) => (text += d))
            .on('end', () => resolve(text))
        }).on('error', reject)
      })
      const event = JSON.parse(/^data: (.*)$/m.exec(body)![1]!)
      const readsByStream = counter.reads // the stream's baseline and its one sample

      at(now() + 500) // exactly one interval old
      const answer = await s.snapshot()
      expect(answer.sampledAt).toBe(event.sampledAt)
      expect(counter.reads).toBe(readsByStream)

      at(now() + 1) // older: one reading, against the stream's (old enough to be a baseline)
      expect((await s.snapshot()).sampledAt).not.toBe(event.sampledAt)
      expect(counter.reads).toBe(readsByStream + 1)
    })
  })
})
