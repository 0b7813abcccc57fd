/** Shapes and helpers the model's files share. */

export interface NetworkModel {
  key: string
  name: string
  external: boolean
  internal: boolean
  labels: Record<string, string>
}

export interface VolumeModel {
  key: string
  name: string
  external: boolean
  labels: Record<string, string>
}

/** Compose's labels as a map: `{ k: v }` or `['k=v']`. */
export function labelMap(value: unknown): Record<string, string> {
  const out: Record<string, string> = {}
  if (Array.isArray(value))
    for (const item of value) {
      const [k, v] = String(item).split(/=(.*)/s)
      if (k) out[k] = v ?? ''
    }
  else if (value && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) out[k] = v === null ? '' : String(v)
  return out
}
