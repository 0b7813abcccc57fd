export interface ThrottleLimits {
  perUser: number
  perAddress: number
  windowSeconds: number
}

/**
 * Counts failed sign-ins per user and per client address in a fixed window. The address is the socket's
 * peer address, never a forwarded header, so a client cannot pick its own bucket. A failure that names no user (an
 * unknown sign-in challenge) counts for the address alone.
 */
export class LoginThrottle {
  readonly #limits: ThrottleLimits
  readonly #failures = new Map<string, { count: number; resetAt: number }>()

  constructor(limits: ThrottleLimits) {
    this.#limits = limits
  }

  /** Seconds to wait before another attempt, or 0 when one is allowed now. */
  retryAfter(usernameKey: string | null, address: string): number {
    const now = Date.now()
    const wait = (key: string, limit: number) => {
      const entry = this.#failures.get(key)
      if (!entry || entry.resetAt <= now || entry.count < limit) return 0
      return Math.ceil((entry.resetAt - now) / 1000)
    }
    return Math.max(
      usernameKey === null ? 0 : wait(`u:${usernameKey}`, this.#limits.perUser),
      wait(`a:${address}`, this.#limits.perAddress),
    )
  }

  fail(usernameKey: string | null, address: string): void {
    const now = Date.now()
    if (this.#failures.size > 50_000) this.#prune(now)
    for (const key of usernameKey === null ? [`a:${address}`] : [`u:${usernameKey}`, `a:${address}`]) {
      const entry = this.#failures.get(key)
      if (!entry || entry.resetAt <= now)
        this.#failures.set(key, { count: 1, resetAt: now + this.#limits.windowSeconds * 1000 })
      else entry.count++
    }
  }

  /** A successful sign-in clears the user's count (the address keeps its own). */
  succeed(usernameKey: string): void {
    this.#failures.delete(`u:${usernameKey}`)
  }

  #prune(now: number): void {
    for (const [key, entry] of this.#failures) if (entry.resetAt <= now) this.#failures.delete(key)
  }
}
