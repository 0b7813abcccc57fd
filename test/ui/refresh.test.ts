/**
 * The kit's refresh schedule (ui/src/kit/resource.ts, under `useResource`): loads never overlap, the next one starts
 * `every` ms after the last one ended, nothing loads while the tab is hidden (at once when it comes back, if one
 * fell due), `reload` aborts the load in flight, window events load again, and the owner's signal ends it all.
 * A document of a visibility state and a window of events stand in for the browser's.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { startRefreshing } from '../../ui/src/kit/resource.ts'

const page = new EventTarget() as EventTarget & { visibilityState: DocumentVisibilityState }
const window = new EventTarget()
const setVisibility = (state: DocumentVisibilityState) => {
  page.visibilityState = state
  page.dispatchEvent(new Event('visibilitychange'))
}

/** A load that ends when the test says so, recording each call and its signal. */
function controlledLoad() {
  const calls: { signal: AbortSignal; finish: () => void }[] = []
  const load = (signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      calls.push({ signal, finish: resolve })
    })
  return { calls, load }
}

/** Lets the promise callbacks of a finished load run (they re-arm the timer). */
const settle = () => vi.advanceTimersByTimeAsync(0)

let owner: AbortController

beforeAll(() => {
  vi.stubGlobal('document', page)
  vi.stubGlobal('addEventListener', window.addEventListener.bind(window))
})
afterAll(() => vi.unstubAllGlobals())
beforeEach(() => {
  vi.useFakeTimers()
  page.visibilityState = 'visible'
  owner = new AbortController()
})
afterEach(() => {
  owner.abort()
  vi.useRealTimers()
})

describe('startRefreshing', () => {
  it('loads at once, then `every` ms after the last load ended, never two at a time', async () => {
    const { calls, load } = controlledLoad()
    startRefreshing(load, { every: 1000, signal: owner.signal })
    expect(calls).toHaveLength(1)
    // A slow load: the interval passes twice while it runs, and no second load starts.
    await vi.advanceTimersByTimeAsync(2500)
    expect(calls).toHaveLength(1)
    calls[0]!.finish()
    await settle()
    await vi.advanceTimersByTimeAsync(999)
    expect(calls).toHaveLength(1)
    await vi.advanceTimersByTimeAsync(1)
    expect(calls).toHaveLength(2)
  })

  it('waits while the tab is hidden and loads when it comes back, if a load fell due meanwhile', async () => {
    const { calls, load } = controlledLoad()
    startRefreshing(load, { every: 1000, signal: owner.signal })
    calls[0]!.finish()
    await settle()
    setVisibility('hidden')
    await vi.advanceTimersByTimeAsync(5000)
    expect(calls).toHaveLength(1)
    setVisibility('visible')
    expect(calls).toHaveLength(2)
    calls[1]!.finish()
    await settle()
    // Back again before the next one is due: nothing extra.
    setVisibility('hidden')
    setVisibility('visible')
    expect(calls).toHaveLength(2)
  })

  it('reload aborts the load in flight and starts another; an abandoned load does not schedule', async () => {
    const { calls, load } = controlledLoad()
    const refresher = startRefreshing(load, { every: 1000, signal: owner.signal })
    refresher.reload()
    expect(calls).toHaveLength(2)
    expect(calls[0]!.signal.aborted).toBe(true)
    expect(calls[1]!.signal.aborted).toBe(false)
    calls[0]!.finish()
    await settle()
    await vi.advanceTimersByTimeAsync(5000)
    expect(calls).toHaveLength(2)
  })

  it('loads again on the named window events, and a rejected load does not stop the schedule', async () => {
    let count = 0
    startRefreshing(
      async () => {
        count++
        throw new Error('the server is down')
      },
      { every: 1000, on: ['hostd:test-changed'], signal: owner.signal },
    )
    await settle()
    expect(count).toBe(1)
    window.dispatchEvent(new Event('hostd:test-changed'))
    await settle()
    expect(count).toBe(2)
    await vi.advanceTimersByTimeAsync(1000)
    expect(count).toBe(3)
  })

  it('setEvery starts, changes and stops the schedule without an extra load', async () => {
    const { calls, load } = controlledLoad()
    const refresher = startRefreshing(load, { signal: owner.signal })
    calls[0]!.finish()
    await settle()
    await vi.advanceTimersByTimeAsync(10_000)
    expect(calls).toHaveLength(1)
    // Counted from the end of the last load, which was 10 s ago: due at once.
    refresher.setEvery(2000)
    await settle()
    expect(calls).toHaveLength(2)
    calls[1]!.finish()
    await settle()
    refresher.setEvery(undefined)
    await vi.advanceTimersByTimeAsync(10_000)
    expect(calls).toHaveLength(2)
  })

  it("the owner's signal aborts the load in flight and ends the schedule and the listeners", async () => {
    const { calls, load } = controlledLoad()
    const refresher = startRefreshing(load, { every: 1000, on: ['hostd:test-changed'], signal: owner.signal })
    owner.abort()
    expect(calls[0]!.signal.aborted).toBe(true)
    calls[0]!.finish()
    await settle()
    await vi.advanceTimersByTimeAsync(5000)
    window.dispatchEvent(new Event('hostd:test-changed'))
    setVisibility('hidden')
    setVisibility('visible')
    refresher.reload()
    expect(calls).toHaveLength(1)
  })
})
