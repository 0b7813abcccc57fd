/**
 * What the storage views share: the API's shapes, derived from the plugin's own TypeBox schemas (imported as types,
 * so no schema is bundled), the helper's state and the URLs with a query.
 */
import type { Static } from '@hostd/sdk'
import type {
  DoneAnswer,
  EntrySchema,
  ExportList,
  ExportSchema,
  ListSchema,
  OverviewSchema,
  PreviewSchema,
  SmartSchema,
  UploadAnswer,
} from '../../src/schemas.ts'

export type Overview = Static<typeof OverviewSchema>
export type Disk = Overview['disks'][number]
export type Volume = Overview['volumes'][number]
export type ContainerVolume = NonNullable<Overview['containerVolumes']>[number]
export type FileRoot = Overview['roots'][number]
export type NetworkShare = Overview['shares'][number]
export type SmbExport = Static<typeof ExportSchema>
export type Exports = Static<typeof ExportList>
export type Smart = Static<typeof SmartSchema>
export type Entry = Static<typeof EntrySchema>
export type Listing = Static<typeof ListSchema>
export type Preview = Static<typeof PreviewSchema>
export type Uploaded = Static<typeof UploadAnswer>
export type Done = Static<typeof DoneAnswer>

/** Names the file browser asks a thumbnail for, up to the server's default cap (a larger one shows the icon). */
export const IMAGE_NAME = /\.(png|jpe?g|gif|webp|avif|bmp|ico)$/i
export const THUMBNAIL_MAX_BYTES = 4 * 1024 * 1024

/** Builds an API or page URL with its query (skipping empty values). */
export function withQuery(path: string, query: Record<string, string | undefined>): string {
  const params = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, v)
  const q = params.toString()
  return q ? `${path}?${q}` : path
}

/** The helper's state as this page knows it: `missing` after a 423 or when GET /api/system/privileged says so. */
export interface HelperState {
  missing: boolean
  /** A request answered 423: show the notice. */
  report(error: unknown): boolean
}
