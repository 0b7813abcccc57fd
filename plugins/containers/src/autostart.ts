/**
 * Auto-start, keyed by container name (so a recreated container keeps it), stored in the plugin's settings
 * under `autostart` as a sorted list of names. Read once into memory; the list path only reads the set.
 */
import type { Settings } from '@hostd/sdk'

const KEY = 'autostart'

export class AutoStart {
  readonly #settings: Settings
  #names = new Set<string>()

  constructor(settings: Settings) {
    this.#settings = settings
  }

  async load(): Promise<void> {
    const stored = await this.#settings.get<string[]>(KEY)
    this.#names = new Set(Array.isArray(stored) ? stored.filter((n) => typeof n === 'string') : [])
  }

  has(name: string): boolean {
    return this.#names.has(name)
  }

  names(): string[] {
    return [...this.#names].sort()
  }

  /** Returns the previous value. */
  async set(name: string, enabled: boolean): Promise<boolean> {
    const before = this.#names.has(name)
    if (enabled) this.#names.add(name)
    else this.#names.delete(name)
    await this.#settings.set(KEY, this.names())
    return before
  }
}
