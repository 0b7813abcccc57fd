import { describe, expect, it } from 'vitest'
import { Mutex } from './mutex.ts'

describe('Mutex', () => {
  it('runs tasks one at a time in arrival order, and a failure does not stop the next', async () => {
    const mutex = new Mutex()
    const events: string[] = []
    const task =
      (name: string, fail = false) =>
      async () => {
        events.push(`${name} start`)
        await new Promise((resolve) => setTimeout(resolve, 5))
        events.push(`${name} end`)
        if (fail) throw new Error(name)
        return name
      }
    const results = await Promise.allSettled([mutex.run(task('a')), mutex.run(task('b', true)), mutex.run(task('c'))])
    expect(events).toEqual(['a start', 'a end', 'b start', 'b end', 'c start', 'c end'])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
  })
})
