/**
 * A daemon process for the crash test: the real kernel (via the sdk harness) serving this plugin over HTTP on a
 * loopback port, on the data dir given in SKILLS_DATA_DIR. With SKILLS_PAUSE_MARKER set, a replace stops
 * forever after writing its blobs and before its database commit, and writes the marker file, so the test
 * can kill -9 the process at exactly that point. Prints one JSON line: {url, token, harnessDir}.
 */
import { writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { startTestKernel } from '@hostd/sdk/testing'
import { createSkillsPlugin } from '../../src/index.ts'

const dataDir = process.env.SKILLS_DATA_DIR
if (!dataDir) throw new Error('SKILLS_DATA_DIR is required')
const marker = process.env.SKILLS_PAUSE_MARKER

const plugin = createSkillsPlugin({
  hooks: {
    beforeCommit: async ({ origin }) => {
      if (!marker || origin !== 'update') return
      writeFileSync(marker, String(process.pid))
      await new Promise(() => {})
    },
  },
})
const t = await startTestKernel({ plugins: [plugin], env: { HOSTD_DATA_DIR: dataDir }, listen: true })
const { token } = await t.login('admin', `admin-${process.pid}`)
process.once('SIGTERM', () => void t.close().then(() => process.exit(0)))
process.stdout.write(`${JSON.stringify({ url: t.url, token, harnessDir: dirname(t.kernel.config.helperSocket) })}\n`)
