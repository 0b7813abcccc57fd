/** The storage API's shapes for the pages, derived from the plugin's own TypeBox schemas (type-only: nothing is bundled). */
import type { Static } from '@hostd/sdk'
import type {
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

/** The helper's state as this page knows it: `missing` after a 423 or when GET /api/system/privileged says so. */
export interface HelperState {
  missing: boolean
  /** A request answered 423: show the notice. */
  report(error: unknown): boolean
}
