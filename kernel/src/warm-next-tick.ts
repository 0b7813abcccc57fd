/**
 * Gets process.nextTick optimized by V8 before any plugin code runs. Node calls nextTick about five times per HTTP
 * request. Left to itself, V8 optimizes it while the built-in plugins start, and code they run then (any
 * fs/promises call) leaves its type feedback such that the optimized nextTick creates each tick object through a
 * generic runtime call, for the life of the process. Optimized first, on clean feedback, it stays on the fast
 * path. Why and what it buys: docs/ARCHITECTURE.md, "Warming process.nextTick". Takes about 70 ms.
 */
export async function warmNextTick(): Promise<void> {
  const noop = (..._args: unknown[]): void => {}
  const x = {} // Node's own callers pass objects (streams, sockets)
  for (let batch = 0; batch < 20; batch++) {
    // Every arity Node's own callers use, so the optimized code has feedback for each branch and no later call
    // sends it back to be re-optimized on whatever feedback the plugins leave.
    for (let i = 0; i < 1000; i++) {
      process.nextTick(noop)
      process.nextTick(noop, x)
      process.nextTick(noop, x, i)
      process.nextTick(noop, x, x, i)
      process.nextTick(noop, x, x, x, i)
    }
    await new Promise((resolve) => setImmediate(resolve))
  }
}
