/** Small real images (and impostors) for the branding tests and samples. */
import { deflateSync } from 'node:zlib'

function crc32(buf: Buffer): number {
  let c = ~0
  for (const byte of buf) {
    c ^= byte
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1))
  }
  return ~c >>> 0
}
function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4)
  len.writeUInt32BE(data.length)
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data])
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(body))
  return Buffer.concat([len, body, crc])
}

/** An 8-bit RGB PNG of `rows`: each row is a filter byte (0) and width×3 bytes. */
function encodePng(width: number, height: number, rows: Buffer): Buffer {
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr[8] = 8
  ihdr[9] = 2
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ])
}

/** A valid 2x2 RGB PNG of one colour. */
export function png(r = 200, g = 30, b = 90): Buffer {
  const row = Buffer.from([0, r, g, b, r, g, b])
  return encodePng(2, 2, Buffer.concat([row, row]))
}

/** A `width`×`height` PNG with a diagonal gradient between two colours: a background that looks like one. */
export function gradientPng(width: number, height: number, from = [30, 64, 175], to = [13, 148, 136]): Buffer {
  const rows = Buffer.alloc(height * (1 + width * 3))
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const t = (x / width + y / height) / 2
      for (let c = 0; c < 3; c++)
        rows[y * (1 + width * 3) + 1 + x * 3 + c] = Math.round(from[c]! + (to[c]! - from[c]!) * t)
    }
  }
  return encodePng(width, height, rows)
}

export const JPEG_HEAD = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00])
export const WEBP_HEAD = Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x1a, 0, 0, 0]), Buffer.from('WEBPVP8 ')])
export const GIF = Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1')
export const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>')
