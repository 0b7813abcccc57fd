/** vitest globalSetup: spawned daemons run the build by default (test/support/daemon.ts), so build it once (only if a source changed). */
import { buildDaemon } from '../../kernel/build.mjs'

export default async function setup(): Promise<void> {
  await buildDaemon({ ifChanged: true })
}
