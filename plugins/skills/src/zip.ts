import { Readable } from 'node:stream'
import { createDeflateRaw, crc32 } from 'node:zlib'
import type { ZipInputFile } from 'fflate'
import type { BlobStore } from './blobs.ts'

export interface ZipEntry {
  /** Path inside the archive. */
  name: string
  sha256: string
}

/**
 * A zip of blobs as a stream. fflate writes the zip structure (local headers, data descriptors, central
 * directory); Node's zlib deflates each file off the main thread and `zlib.crc32` checksums it, so a large
 * export neither blocks the daemon nor holds more than a few chunks in memory (the generator runs only as
 * fast as the client reads).
 */
export function zipStream(blobs: BlobStore, entries: ZipEntry[], mtime: Date): Readable {
  async function* chunks(): AsyncGenerator<Uint8Array> {
    const queue: Uint8Array[] = []
    let failure: Error | null = null
    // fflate is loaded on first use (docs/ARCHITECTURE.md, "Runtime": libraries a start does not need).
    const { Zip } = await import('fflate')
    const zip = new Zip((err, data) => {
      if (err) failure = err
      else queue.push(data)
    })
    for (const entry of entries) {
      const file: ZipInputFile = { filename: entry.name, size: 0, crc: 0, compression: 8, mtime }
      zip.add(file)
      const source = blobs.stream(entry.sha256)
      let crc = 0
      let size = 0
      source.on('data', (chunk: string | Buffer) => {
        crc = crc32(chunk, crc)
        size += chunk.length
      })
      const deflate = createDeflateRaw({ level: 6 })
      source.on('error', (err) => deflate.destroy(err))
      source.pipe(deflate)
      let held: Uint8Array<ArrayBuffer> | null = null
      for await (const out of deflate as AsyncIterable<Buffer>) {
        if (held) file.ondata!(null, held, false)
        held = out as Uint8Array<ArrayBuffer>
        while (queue.length) yield queue.shift()!
        if (failure) throw failure
      }
      // The data descriptor after the last chunk carries the size and checksum of the original bytes.
      file.size = size
      file.crc = crc >>> 0
      file.ondata!(null, held ?? new Uint8Array(new ArrayBuffer(0)), true)
      while (queue.length) yield queue.shift()!
      if (failure) throw failure
    }
    zip.end()
    while (queue.length) yield queue.shift()!
    if (failure) throw failure
  }
  return Readable.from(chunks(), { objectMode: false })
}
