import { hash } from 'node:crypto'
import type { WriteCounter } from '../db/write-counter.ts'

export const hashToken = (token: string): string => hash('sha256', token, 'base64url')

/** How many live tokens are remembered (oldest forgotten first). */
const REMEMBERED_TOKENS = 4096

/** A token's hash and the row its lookup read; `readAt` is the write count then, or -1 when it may not be kept. */
export interface TokenRead<Row> {
  hash: string
  row: Row | undefined
  readAt: number
}

/**
 * Token -> its SHA-256 and the row its lookup last read (a session or an API token joined with its user), for tokens
 * that resolved to something live. Hashing was about 4 µs and the SQLite join about 10 µs of each authenticated
 * request (measured: docs/decisions/measurements.md). The row is reused only while the database's write count is the one it was
 * read at: any statement that may write (a role change, a disable, a sign-out, a touch, an audit record) makes the
 * next request read it again, so a change still shows on the very next request.
 */
export class RememberedTokens<Row> {
  readonly #entries = new Map<string, TokenRead<Row>>()
  readonly #writes: WriteCounter

  constructor(writes: WriteCounter) {
    this.#writes = writes
  }

  /** The token's hash and row: the remembered row while nothing was written since it was read, else `select`'s. */
  read(token: string, select: (tokenHash: string) => Row | undefined): TokenRead<Row> {
    const entry = this.#entries.get(token)
    const count = this.#writes.count
    if (entry !== undefined && entry.readAt === count) return entry
    const tokenHash = entry?.hash ?? hashToken(token)
    return { hash: tokenHash, row: select(tokenHash), readAt: this.#writes.settled ? count : -1 }
  }

  hashOf(token: string): string {
    return this.#entries.get(token)?.hash ?? hashToken(token)
  }

  /** Only for tokens that proved live, so made-up tokens cannot crowd out real ones. */
  remember(token: string, read: TokenRead<Row>): void {
    if (this.#entries.get(token) === read) return
    if (!this.#entries.has(token) && this.#entries.size >= REMEMBERED_TOKENS)
      this.#entries.delete(this.#entries.keys().next().value!)
    this.#entries.set(token, read)
  }

  forget(token: string): null {
    this.#entries.delete(token)
    return null
  }
}
