/** vitest globalSetup: the browser tests drive the real bundle, so build ui/dist once (only if a source changed). */
import { buildUi } from '../../ui/build.mjs'

export default async function setup(): Promise<void> {
  await buildUi({ ifChanged: true })
}
