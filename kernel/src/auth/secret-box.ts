import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

const KEY_FILE = 'secret.key'
const VERSION = 'v1'

/**
 * The daemon's own key (`<data dir>/secret.key`, 32 random bytes, mode 0600, made on first start) and what it is
 * used for: sealing TOTP secrets at rest (AES-256-GCM), keying the hashes of recovery codes (HMAC-SHA-256), and each
 * plugin's secrets (`forPlugin`: `tokens.secrets`), so a copy of the database alone reveals none of them. Losing the
 * key file makes two-factor unusable for everyone who has it on (an admin resets it; see docs/API.md) and the
 * plugins' sealed secrets unreadable (they are entered again); the tokens and sessions do not depend on it.
 */
export class SecretBox {
  readonly #sealKey: Buffer
  readonly #macKey: Buffer

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error(`${KEY_FILE} must hold 32 bytes`)
    // Separate keys per use, derived from the one stored key.
    this.#sealKey = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'hostd seal', 32))
    this.#macKey = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'hostd mac', 32))
  }

  /** Reads the data dir's key, creating it on first start. */
  static async load(dataDir: string): Promise<SecretBox> {
    const path = join(dataDir, KEY_FILE)
    try {
      await writeFile(path, randomBytes(32), { mode: 0o600, flag: 'wx' })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    }
    return new SecretBox(await readFile(path))
  }

  seal(plain: string): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.#sealKey, iv)
    const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
    return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url')}`
  }

  /** The sealed text, or null when it was not sealed with this key (a replaced key file, a damaged value). */
  open(sealed: string): string | null {
    const [version, body] = sealed.split('.')
    if (version !== VERSION || !body) return null
    const bytes = Buffer.from(body, 'base64url')
    if (bytes.length < 28) return null
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#sealKey, bytes.subarray(0, 12))
      decipher.setAuthTag(bytes.subarray(12, 28))
      return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8')
    } catch {
      return null
    }
  }

  /**
   * A sealer for one plugin (`tokens.secrets`): its own key, derived from the stored one with the plugin's id, so a
   * plugin cannot open what another sealed, nor what the kernel sealed.
   */
  forPlugin(id: string): { seal(plain: string): string; open(sealed: string): string | null } {
    return new SecretBox(Buffer.from(hkdfSync('sha256', this.#sealKey, Buffer.alloc(0), `hostd plugin ${id}`, 32)))
  }

  mac(value: string): string {
    return createHmac('sha256', this.#macKey).update(value).digest('base64url')
  }
}
