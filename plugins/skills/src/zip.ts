import { Readable } from 'node:stream'
import { Zip, ZipDeflate } from 'fflate'
import type { BlobStore } from './blobs.ts'

export interface ZipEntry {
  /** Path inside the archive. */
  name: string
  sha256: string
}

/**
 * A zip of blobs as a stream: each blob is read from disk in chunks and deflated as the client reads, so memory
 * stays bounded by a chunk or two, whatever the bundle size (the async generator only runs when pulled).
 */
export function zipStream(blobs: BlobStore, entries: ZipEntry[], mtime: Date): Readable {
  async function* chunks(): AsyncGenerator<Uint8Array> {
    const queue: Uint8Array[] = []
    let failure: Error | null = null
    const zip = new Zip((err, data) => {
      if (err) failure = err
      else queue.push(data)
    })
    for (const entry of entries) {
      const file = new ZipDeflate(entry.name, { level: 6 })
      file.mtime = mtime
      zip.add(file)
      let last: Uint8Array | null = null
      for await (const chunk of blobs.stream(entry.sha256)) {
        if (last) file.push(last)
        last = chunk as Buffer
        while (queue.length) yield queue.shift()!
        if (failure) throw failure
      }
      file.push(last ?? new Uint8Array(0), true)
      while (queue.length) yield queue.shift()!
      if (failure) throw failure
    }
    zip.end()
    while (queue.length) yield queue.shift()!
    if (failure) throw failure
  }
  return Readable.from(chunks(), { objectMode: false })
}
