/**
 * The branding store: three text fields in the plugin's settings, and one background image on disk under
 * `<data dir>/branding/` (written to a temporary name, fsynced, renamed), described by its type and SHA-256 in
 * the settings. This store is the only writer of those settings, so it keeps them in memory once read, and the
 * image too (at most 4 MiB): the public routes read neither the database nor the disk after the first request.
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises'
import { hostname } from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import type { Settings } from '@hostd/sdk'
import { BrandingErrors } from './errors.ts'
import { sniffImage, type ImageType } from './image.ts'
import { BACKGROUND_MAX_BYTES, type Branding, type BrandingUpdate } from './schemas.ts'

interface StoredText {
  serverName?: string
  headline?: string
  description?: string
}
interface BackgroundMeta {
  type: ImageType
  sha256: string
  bytes: number
}

/** C0/C1 controls, DEL, and the bidirectional overrides/isolates that could disguise text; `\n` and `\t` are allowed only in `description`. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/
const CONTROL_IN_PARAGRAPH = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/

/** Plain text only: a control character is a 400 naming the field (the text is stored and answered verbatim otherwise). */
export function checkText(update: BrandingUpdate): void {
  for (const [field, value] of Object.entries(update) as [keyof BrandingUpdate, string][]) {
    const bad = field === 'description' ? CONTROL_IN_PARAGRAPH : CONTROL
    if (bad.test(value))
      throw BrandingErrors.textInvalid(
        `${field} holds a control character: plain text only${field === 'description' ? ' (line breaks and tabs are allowed)' : ''}`,
      )
  }
}

export function backgroundUrl(meta: BackgroundMeta): string {
  return `/api/branding/background?v=${meta.sha256.slice(0, 16)}`
}

export class BrandingStore {
  readonly #settings: Settings
  readonly #dir: string
  #cached: { meta: BackgroundMeta; data: Buffer } | null = null
  #text: StoredText | null = null
  /** undefined: not read yet; null: none set. */
  #meta: BackgroundMeta | null | undefined = undefined

  constructor(settings: Settings, dataDir: string) {
    this.#settings = settings
    this.#dir = join(dataDir, 'branding')
  }

  async #readText(): Promise<StoredText> {
    this.#text ??= (await this.#settings.get<StoredText>('text')) ?? {}
    return this.#text
  }

  async #readMeta(): Promise<BackgroundMeta | null> {
    if (this.#meta === undefined) this.#meta = (await this.#settings.get<BackgroundMeta>('background')) ?? null
    return this.#meta
  }

  async get(): Promise<Branding> {
    const text = this.#text ?? (await this.#readText())
    const meta = this.#meta === undefined ? await this.#readMeta() : this.#meta
    return {
      serverName: text.serverName || hostname(),
      headline: text.headline ?? '',
      description: text.description ?? '',
      background: meta ? backgroundUrl(meta) : null,
    }
  }

  /** Sets the fields given; answers which changed. */
  async update(update: BrandingUpdate): Promise<string[]> {
    checkText(update)
    const text = await this.#readText()
    const changed = (Object.keys(update) as (keyof BrandingUpdate)[]).filter((k) => (text[k] ?? '') !== update[k])
    const next = { ...text, ...update }
    await this.#settings.set('text', next)
    this.#text = next
    return changed
  }

  /** Reads the upload (capped), checks its magic bytes, stores it atomically. */
  async setBackground(body: Readable): Promise<BackgroundMeta> {
    const chunks: Buffer[] = []
    let size = 0
    for await (const chunk of body) {
      size += (chunk as Buffer).length
      if (size > BACKGROUND_MAX_BYTES) {
        body.destroy()
        throw BrandingErrors.imageTooLarge(
          `The background image is larger than ${BACKGROUND_MAX_BYTES / 1024 / 1024} MiB`,
        )
      }
      chunks.push(chunk as Buffer)
    }
    const data = Buffer.concat(chunks)
    const type = sniffImage(data)
    if (!type)
      throw BrandingErrors.imageType(
        'The background must be a PNG, JPEG or WebP image (read from its bytes, not its Content-Type)',
      )
    const meta: BackgroundMeta = { type, sha256: createHash('sha256').update(data).digest('hex'), bytes: data.length }
    await mkdir(this.#dir, { recursive: true, mode: 0o700 })
    const temp = join(this.#dir, `.background-${randomBytes(6).toString('hex')}`)
    const handle = await open(temp, 'wx', 0o600)
    try {
      await handle.writeFile(data)
      await handle.sync()
    } finally {
      await handle.close()
    }
    await rename(temp, join(this.#dir, 'background'))
    await this.#settings.set('background', meta)
    this.#meta = meta
    this.#cached = { meta, data }
    return meta
  }

  /** Removes the background; answers whether there was one. */
  async removeBackground(): Promise<boolean> {
    const meta = await this.#readMeta()
    await this.#settings.delete('background')
    this.#meta = null
    this.#cached = null
    await rm(join(this.#dir, 'background'), { force: true })
    return Boolean(meta)
  }

  async background(): Promise<{ meta: BackgroundMeta; data: Buffer }> {
    const meta = await this.#readMeta()
    if (!meta) throw BrandingErrors.noBackground()
    if (this.#cached?.meta.sha256 !== meta.sha256) {
      const data = await readFile(join(this.#dir, 'background')).catch(() => null)
      if (!data) throw BrandingErrors.noBackground('The background image file is missing; upload it again')
      this.#cached = { meta, data }
    }
    return this.#cached
  }
}
