/** Small helpers plugin tests share, with nothing but Node's own modules behind them (exported by `@hostd/sdk/testing`). */
import { createServer } from 'node:net'

/**
 * Polls `fn` every `everyMs` until it answers a truthy value, and resolves with that value. No timing is asserted:
 * the test's own timeout bounds the wait, so a slow machine is not a failure.
 */
export async function eventually<T>(
  fn: () => T | null | undefined | false | Promise<T | null | undefined | false>,
  everyMs = 50,
): Promise<T> {
  for (;;) {
    const value = await fn()
    if (value) return value
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

/** A loopback TCP port nobody listens on right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}
