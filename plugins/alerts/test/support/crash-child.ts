/**
 * A kernel with the alerts plugin in a process of its own, on the data folder named by its argument: it says
 * `ready` once started. The test then stops it as the daemon stops (SIGTERM: the kernel closes, every plugin stops),
 * or kills it (SIGKILL), as a crash or an OOM kill would end the daemon.
 */
import { startTestKernel } from '@hostd/sdk/testing'
import { createAlertsPlugin } from '../../src/index.ts'

const t = await startTestKernel({
  plugins: [createAlertsPlugin({ smartIntervalMs: 0, systemIntervalMs: 0, attachIntervalMs: 60_000 })],
  env: { HOSTD_DATA_DIR: process.argv[2]! },
})
process.once('SIGTERM', () => void t.close().then(() => process.exit(0)))
process.stdout.write('ready\n')
setInterval(() => undefined, 1 << 30)
