import { createHash, randomBytes } from 'node:crypto'
import { createReadStream, type ReadStream } from 'node:fs'
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'

const SHA256 = /^[0-9a-f]{64}$/

export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex')
}

async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/**
 * Content-addressed file store: `blobs/<first two hex>/<sha256>`. A blob is immutable once it has its name:
 * it is written under a temporary name in `tmp/`, fsynced, renamed into place and its folder fsynced, so a
 * crash leaves either no blob or a whole one. Revisions and drafts refer to blobs by hash; `gc` removes what
 * no row refers to (orphans of a publish that never committed) and whatever `tmp/` still holds.
 */
export class BlobStore {
  readonly root: string
  readonly #blobs: string
  readonly #tmp: string

  constructor(root: string) {
    this.root = root
    this.#blobs = join(root, 'blobs')
    this.#tmp = join(root, 'tmp')
  }

  async init(): Promise<void> {
    await mkdir(this.#blobs, { recursive: true, mode: 0o700 })
    await rm(this.#tmp, { recursive: true, force: true })
    await mkdir(this.#tmp, { recursive: true, mode: 0o700 })
  }

  pathOf(hash: string): string {
    if (!SHA256.test(hash)) throw new Error(`not a sha256: ${hash}`)
    return join(this.#blobs, hash.slice(0, 2), hash)
  }

  async has(hash: string): Promise<boolean> {
    return stat(this.pathOf(hash)).then(
      (s) => s.isFile(),
      () => false,
    )
  }

  /** Stores `data` durably under its hash; a blob already present is left as it is. */
  async put(data: Buffer): Promise<{ sha256: string; size: number }> {
    const hash = sha256(data)
    const final = this.pathOf(hash)
    if (!(await this.has(hash))) {
      const tmp = join(this.#tmp, `${hash}.${randomBytes(6).toString('hex')}`)
      const handle = await open(tmp, 'wx', 0o600)
      try {
        await handle.writeFile(data)
        await handle.sync()
      } finally {
        await handle.close()
      }
      const dir = join(this.#blobs, hash.slice(0, 2))
      await mkdir(dir, { recursive: true, mode: 0o700 })
      await rename(tmp, final)
      await fsyncDir(dir)
    }
    return { sha256: hash, size: data.length }
  }

  read(hash: string): Promise<Buffer> {
    return readFile(this.pathOf(hash))
  }

  stream(hash: string): ReadStream {
    return createReadStream(this.pathOf(hash))
  }

  /** Every blob on disk, by hash. */
  async list(): Promise<string[]> {
    const out: string[] = []
    for (const dir of await readdir(this.#blobs).catch(() => [] as string[])) {
      for (const name of await readdir(join(this.#blobs, dir)).catch(() => [] as string[])) out.push(name)
    }
    return out
  }

  /** Removes blobs nobody refers to and leftovers in tmp/; returns how many blobs went. */
  async gc(referenced: Set<string>): Promise<number> {
    let removed = 0
    for (const dir of await readdir(this.#blobs).catch(() => [] as string[])) {
      const names = await readdir(join(this.#blobs, dir)).catch(() => [] as string[])
      for (const name of names) {
        if (referenced.has(name)) continue
        await rm(join(this.#blobs, dir, name), { force: true })
        removed++
      }
      if (names.every((n) => !referenced.has(n))) await rm(join(this.#blobs, dir), { recursive: true, force: true })
    }
    for (const name of await readdir(this.#tmp).catch(() => [] as string[]))
      await rm(join(this.#tmp, name), { force: true })
    return removed
  }
}
