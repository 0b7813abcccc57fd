/**
 * Secrets at rest, as the kernel seals two-factor secrets (kernel/src/auth/secret-box.ts): AES-256-GCM with a key
 * derived (HKDF-SHA-256) from 32 random bytes in an owner-only file, here `<data dir>/backups/secret.key`. The
 * settings hold only the sealed text, so a copy of the database alone reveals no repository password, SSH key or
 * REST credential. While restic runs, a secret it must read is written to an owner-only file in a 0700 folder and
 * removed as soon as the run ends (restic reads RESTIC_PASSWORD_FILE; ssh reads its key from a file).
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

const VERSION = 'b1'

export class Sealer {
  readonly #key: Buffer
  constructor(key: Buffer) {
    this.#key = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'hostd backups seal', 32))
  }

  static async load(dir: string): Promise<Sealer> {
    await mkdir(dir, { recursive: true, mode: 0o700 })
    const path = join(dir, 'secret.key')
    try {
      await writeFile(path, randomBytes(32), { mode: 0o600, flag: 'wx' })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    }
    const key = await readFile(path)
    if (key.length !== 32) throw new Error(`${path} must hold 32 bytes`)
    return new Sealer(key)
  }

  seal(plain: string): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv)
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
    return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`
  }

  /** The plain text, or null when it was not sealed with this key. */
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

/** Owner-only files for one restic run, in a fresh 0700 folder under `root`; `dispose` removes them. */
export class SecretFiles {
  readonly dir: string
  constructor(root: string) {
    this.dir = join(root, randomBytes(8).toString('hex'))
  }

  async write(name: string, content: string): Promise<string> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 })
    await chmod(this.dir, 0o700)
    const path = join(this.dir, name)
    await writeFile(path, content, { mode: 0o600, flag: 'wx' })
    return path
  }

  dispose(): Promise<void> {
    return rm(this.dir, { recursive: true, force: true })
  }
}
