/**
 * Channel secrets (webhook HMAC keys, SMTP passwords, ntfy tokens, Apprise URLs) sealed at rest with AES-256-GCM,
 * as the kernel seals two-factor secrets (kernel/src/auth/secret-box.ts): the key is derived (HKDF-SHA-256, an info
 * string of this plugin's own) from the daemon's `<data dir>/secret.key`, so a copy of the database alone reveals
 * none of them, and there is one key file to keep.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

const VERSION = 'a1'

export class Sealer {
  readonly #key: Buffer

  constructor(key: Buffer) {
    this.#key = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'hostd alerts channel secrets', 32))
  }

  /** The data dir's key file, created (32 random bytes, 0600) when the daemon has not made it yet. */
  static async load(dataDir: string): Promise<Sealer> {
    const path = join(dataDir, 'secret.key')
    await writeFile(path, randomBytes(32), { mode: 0o600, flag: 'wx' }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err
    })
    return new Sealer(await readFile(path))
  }

  seal(plain: string): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv)
    const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
    return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url')}`
  }

  /** The plain text, or null when it was sealed with another key (a replaced key file) or is damaged. */
  open(sealed: string): string | null {
    const [version, body] = sealed.split('.')
    if (version !== VERSION || !body) return null
    const bytes = Buffer.from(body, 'base64url')
    if (bytes.length < 28) return null
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, bytes.subarray(0, 12))
      decipher.setAuthTag(bytes.subarray(12, 28))
      return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8')
    } catch {
      return null
    }
  }
}
