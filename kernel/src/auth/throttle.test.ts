import { describe, expect, it, vi } from 'vitest'
import { LoginThrottle } from './throttle.ts'

describe('LoginThrottle', () => {
  it('locks a user after the limit, for the rest of the window', () => {
    vi.useFakeTimers()
    const t = new LoginThrottle({ perUser: 3, perAddress: 100, windowSeconds: 60 })
    for (let i = 0; i < 3; i++) {
      expect(t.retryAfter('alice', '10.0.0.1')).toBe(0)
      t.fail('alice', `10.0.0.${i}`)
    }
    expect(t.retryAfter('alice', '10.0.0.9')).toBe(60)
    expect(t.retryAfter('bob', '10.0.0.9')).toBe(0)
    vi.advanceTimersByTime(30_000)
    expect(t.retryAfter('alice', '10.0.0.9')).toBe(30)
    vi.advanceTimersByTime(30_001)
    expect(t.retryAfter('alice', '10.0.0.9')).toBe(0)
    vi.useRealTimers()
  })

  it('locks an address that sprays many user names', () => {
    const t = new LoginThrottle({ perUser: 100, perAddress: 5, windowSeconds: 60 })
    for (let i = 0; i < 5; i++) t.fail(`user${i}`, '10.0.0.1')
    expect(t.retryAfter('someone-new', '10.0.0.1')).toBeGreaterThan(0)
    expect(t.retryAfter('someone-new', '10.0.0.2')).toBe(0)
  })

  it('clears the user count on success but not the address count', () => {
    const t = new LoginThrottle({ perUser: 2, perAddress: 3, windowSeconds: 60 })
    t.fail('alice', 'a')
    t.fail('alice', 'a')
    t.succeed('alice')
    expect(t.retryAfter('alice', 'b')).toBe(0)
    t.fail('carol', 'a')
    expect(t.retryAfter('dave', 'a')).toBeGreaterThan(0)
  })
})
