/**
 * Container icons, keyed by container name (so a recreated container keeps its icon), stored as files under
 * `<data dir>/containers/icons/`. The type is read from the bytes, never from the client: PNG, JPEG or SVG.
 * SVG is checked (no scripts, event handlers, foreign objects, entities or outside references) and is also
 * served with a CSP that forbids scripts, so an SVG that got past the check still cannot run anything.
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ContainerErrors } from '../errors.ts'

export const MAX_ICON_BYTES = 256 * 1024
const TYPES = { png: 'image/png', jpg: 'image/jpeg', svg: 'image/svg+xml' } as const
type Ext = keyof typeof TYPES

export function detectIconType(data: Buffer): Ext | null {
  if (data.length >= 8 && data.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    return 'png'
  if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return 'jpg'
  const head = data
    .subarray(0, 1024)
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .trimStart()
  if (/^(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*<svg[\s>]/i.test(head)) return 'svg'
  return null
}

const SVG_FORBIDDEN: [RegExp, string][] = [
  [/<\s*script/i, 'a script'],
  [/\son[a-z]+\s*=/i, 'an event handler attribute'],
  [/<\s*foreignObject/i, 'a foreignObject'],
  [/<!ENTITY|<!DOCTYPE/i, 'a DTD or entity'],
  [/<\s*(iframe|embed|object|handler|listener)/i, 'an embedded document'],
  [/javascript\s*:|data\s*:\s*text\/html/i, 'a script URL'],
  [/(?:xlink:)?href\s*=\s*["']\s*(?!#)/i, 'a reference outside the icon'],
  [/@import|url\(\s*["']?\s*(?!#)/i, 'an outside style reference'],
]

export function checkSvg(text: string): void {
  for (const [pattern, what] of SVG_FORBIDDEN) {
    if (pattern.test(text)) throw ContainerErrors.invalidIcon(`The SVG holds ${what}: refused`)
  }
}

export class IconStore {
  readonly #dir: string
  /** Names that have an icon, read from the folder once, then kept up to date by put and remove (the list's `hasIcon`). */
  #names: Promise<Set<string>> | null = null

  constructor(dataDir: string) {
    this.#dir = join(dataDir, 'containers', 'icons')
  }

  async #find(name: string): Promise<Ext | null> {
    const files = await readdir(this.#dir).catch(() => [] as string[])
    for (const ext of Object.keys(TYPES) as Ext[]) if (files.includes(`${name}.${ext}`)) return ext
    return null
  }

  /** The names of the containers that have an icon. */
  names(): Promise<Set<string>> {
    this.#names ??= readdir(this.#dir).then(
      (files) => new Set(files.flatMap((f) => (/^[^.].*\.(png|jpg|svg)$/.test(f) ? [f.replace(/\.[a-z]+$/, '')] : []))),
      () => new Set<string>(),
    )
    return this.#names
  }

  async get(name: string): Promise<{ type: string; data: Buffer }> {
    const ext = await this.#find(name)
    if (!ext) throw ContainerErrors.iconNotFound(`Container ${name} has no icon`)
    return { type: TYPES[ext], data: await readFile(join(this.#dir, `${name}.${ext}`)) }
  }

  /** Validates and stores; returns the type and whether an icon was replaced. */
  async put(name: string, base64: string): Promise<{ type: string; bytes: number; replaced: boolean }> {
    if (!/^[A-Za-z0-9+/=\s]+$/.test(base64)) throw ContainerErrors.invalidIcon('data must be base64')
    const data = Buffer.from(base64, 'base64')
    if (data.length > MAX_ICON_BYTES)
      throw ContainerErrors.iconTooLarge(`The icon is ${data.length} bytes; the limit is ${MAX_ICON_BYTES}`)
    const ext = detectIconType(data)
    if (!ext) throw ContainerErrors.invalidIcon('Send a PNG, JPEG or SVG icon')
    if (ext === 'svg') checkSvg(data.toString('utf8'))
    await mkdir(this.#dir, { recursive: true, mode: 0o700 })
    const old = await this.#find(name)
    const tmp = join(this.#dir, `.${name}.${process.pid}.tmp`)
    await writeFile(tmp, data, { mode: 0o600 })
    await rename(tmp, join(this.#dir, `${name}.${ext}`))
    if (old && old !== ext) await rm(join(this.#dir, `${name}.${old}`), { force: true })
    ;(await this.names()).add(name)
    return { type: TYPES[ext], bytes: data.length, replaced: Boolean(old) }
  }

  async remove(name: string): Promise<boolean> {
    const ext = await this.#find(name)
    if (!ext) return false
    await rm(join(this.#dir, `${name}.${ext}`), { force: true })
    ;(await this.names()).delete(name)
    return true
  }
}
