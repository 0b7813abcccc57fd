/**
 * Secrets at rest are sealed by the kernel (`tokens.secrets`: AES-256-GCM, a key of this plugin's own derived from the
 * daemon's key file), so the settings hold only the sealed text and a copy of the database alone reveals no repository
 * password, SSH key or REST credential. While restic runs, a secret it must read is written to an owner-only file in a
 * 0700 folder and removed as soon as the run ends (restic reads RESTIC_PASSWORD_FILE; ssh reads its key from a file).
 */
import { randomBytes } from 'node:crypto'
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

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
