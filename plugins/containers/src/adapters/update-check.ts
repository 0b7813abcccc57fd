/**
 * updateAvailable: the registry's digest for an image reference (asked through the engine's
 * /distribution/{ref}/json, so the engine's registry credentials and mirrors apply) compared with the local
 * image's RepoDigests. Checked in the background, a few at a time, at most once per TTL per reference;
 * the list only reads the cache, so it never waits for a registry.
 */
import type { Engine } from './engine.ts'
import { fullName, repositoryOf } from '../image-reference.ts'

const CONCURRENCY = 2

interface Entry {
  digest: string | null
  checkedAt: number
}

export class UpdateChecker {
  readonly #engine: Engine
  readonly #ttlMs: number
  readonly #cache = new Map<string, Entry>()
  readonly #queue: string[] = []
  readonly #queued = new Set<string>()
  #running = 0

  constructor(engine: Engine, ttlMs: number) {
    this.#engine = engine
    this.#ttlMs = ttlMs
  }

  /** Queue a check for each reference not checked within the TTL. Returns at once. */
  observe(refs: string[]): void {
    const now = Date.now()
    for (const ref of new Set(refs)) {
      if (/^sha256:/.test(ref) || this.#queued.has(ref)) continue
      const entry = this.#cache.get(ref)
      if (entry && now - entry.checkedAt < this.#ttlMs) continue
      this.#queued.add(ref)
      this.#queue.push(ref)
    }
    this.#pump()
  }

  /** True when the registry has a digest for `ref` that none of the local image's repo digests match. */
  available(ref: string, repoDigests: string[]): boolean {
    const digest = this.#cache.get(ref)?.digest
    if (!digest || repoDigests.length === 0) return false
    const repo = fullName(repositoryOf(ref))
    const local = repoDigests.filter((d) => fullName(d.split('@')[0]!) === repo).map((d) => d.split('@')[1])
    return local.length > 0 && !local.includes(digest)
  }

  /** Check one reference now (the update socket and tests use it). */
  async check(ref: string): Promise<string | null> {
    const found = await this.#engine.find()
    if (!found) return null
    let digest: string | null = null
    try {
      const info = await new Promise<{ Descriptor?: { digest?: string } }>((resolve, reject) =>
        found.docker.modem.dial(
          {
            path: `/distribution/${ref}/json`,
            method: 'GET',
            statusCodes: { 200: true, 401: 'unauthorized', 403: 'forbidden', 404: 'not found', 500: 'server error' },
          },
          (err: unknown, data: unknown) => (err ? reject(err) : resolve(data as { Descriptor?: { digest?: string } })),
        ),
      )
      digest = info.Descriptor?.digest ?? null
    } catch {
      digest = null
    }
    this.#cache.set(ref, { digest, checkedAt: Date.now() })
    return digest
  }

  #pump(): void {
    while (this.#running < CONCURRENCY && this.#queue.length > 0) {
      const ref = this.#queue.shift()!
      this.#running++
      void this.check(ref).finally(() => {
        this.#running--
        this.#queued.delete(ref)
        this.#pump()
      })
    }
  }
}
