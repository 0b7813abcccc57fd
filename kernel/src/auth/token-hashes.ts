import { hash } from 'node:crypto'

export const hashToken = (token: string): string => hash('sha256', token, 'base64url')

/** How many live tokens' hashes are remembered (oldest forgotten first). */
const REMEMBERED_HASHES = 4096

/**
 * Token -> its SHA-256, for tokens that resolved to something live (a session or an API token). Hashing is about
 * 4 µs of the ~75 µs an authenticated request costs in the daemon (measured); a Map hit is a fraction of that. Only
 * the hash is remembered, never what it resolves to: the row and its user are still read on every request.
 */
export class RememberedHashes {
  readonly #hashes = new Map<string, string>()

  /** The remembered hash, or undefined (then hash it, and `remember` it once it proved live). */
  get(token: string): string | undefined {
    return this.#hashes.get(token)
  }

  hashOf(token: string): string {
    return this.#hashes.get(token) ?? hashToken(token)
  }

  /** Only for tokens that proved live, so made-up tokens cannot crowd out real ones. */
  remember(token: string, tokenHash: string): void {
    if (this.#hashes.size >= REMEMBERED_HASHES) this.#hashes.delete(this.#hashes.keys().next().value!)
    this.#hashes.set(token, tokenHash)
  }

  forget(token: string): null {
    this.#hashes.delete(token)
    return null
  }
}
