import { randomBytes } from 'node:crypto'

/** How long the second step of a sign-in may wait for its code. */
export const CHALLENGE_SECONDS = 300
/** Wrong codes one challenge takes before it is gone (each one also counts in the sign-in throttle). */
const CHALLENGE_ATTEMPTS = 5
/** Challenges held at most; the oldest go first (each is a few hundred bytes, and only a right password makes one). */
const MAX_CHALLENGES = 10_000

interface Pending {
  userId: string
  /** The user name as signed in with (the throttle's key). */
  username: string
  /** The password hash the first step matched: a challenge dies with the password it was issued for. */
  passwordHash: string
  expiresAt: number
  attempts: number
}

/**
 * The second step of a sign-in with two-factor: a right password for such a user makes a random challenge (256 bits)
 * that a right code can complete once, within CHALLENGE_SECONDS. Held in memory: a restart asks for the password
 * again. `take` removes the challenge before the code is checked (so two requests cannot both complete it) and
 * `retry` puts it back after a wrong code until its attempts run out.
 */
export class LoginChallenges {
  readonly #pending = new Map<string, Pending>()

  issue(userId: string, username: string, passwordHash: string): string {
    const now = Date.now()
    if (this.#pending.size >= MAX_CHALLENGES) this.#prune(now)
    if (this.#pending.size >= MAX_CHALLENGES) this.#pending.delete(this.#pending.keys().next().value!)
    const challenge = randomBytes(32).toString('base64url')
    this.#pending.set(challenge, {
      userId,
      username,
      passwordHash,
      expiresAt: now + CHALLENGE_SECONDS * 1000,
      attempts: 0,
    })
    return challenge
  }

  /** The live challenge, taken out (single use); null when unknown, expired or already used. */
  take(challenge: string): Pending | null {
    const found = this.#pending.get(challenge)
    if (!found) return null
    this.#pending.delete(challenge)
    return found.expiresAt > Date.now() ? found : null
  }

  /** Puts a taken challenge back for another try: after a wrong code (`counted`) only while it has attempts left. */
  retry(challenge: string, taken: Pending, counted = true): void {
    if (counted) taken.attempts++
    if (taken.attempts < CHALLENGE_ATTEMPTS && taken.expiresAt > Date.now()) this.#pending.set(challenge, taken)
  }

  #prune(now: number): void {
    for (const [key, entry] of this.#pending) if (entry.expiresAt <= now) this.#pending.delete(key)
  }
}
