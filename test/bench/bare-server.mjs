// The bench's reference server: a bare Fastify 5 HTTPS server in plain JavaScript (no TypeScript stripping), so
// the comparison is with the smallest server of the same stack. `node bare-server.mjs <cert.pem> <key.pem>`
// listens on a free loopback port, prints `bare serving https://127.0.0.1:<port>`, answers {"hello":"world"} on
// GET /api/auth/me (the path hostd is measured on, so both get identical requests), / and /health.
// With a third argument, a folder, it also serves PUT /publish: the least work a JSON publish of base64 files
// can do (the body read into one buffer and parsed once, each file decoded and written durably into the folder:
// temporary name, fsync, rename, folder fsync, files side by side), the skills bench's reference.
import { readFileSync } from 'node:fs'
import { mkdir, open, rename } from 'node:fs/promises'
import { join } from 'node:path'
import Fastify from 'fastify'

const [certFile, keyFile, publishDir] = process.argv.slice(2)
if (!certFile || !keyFile) {
  console.error('usage: bare-server.mjs <cert.pem> <key.pem> [publish dir]')
  process.exit(2)
}
const app = Fastify({
  logger: false,
  https: { cert: readFileSync(certFile), key: readFileSync(keyFile), minVersion: 'TLSv1.2' },
})
const hello = async () => ({ hello: 'world' })
app.get('/api/auth/me', hello)
app.get('/health', hello)
app.get('/', hello)
if (publishDir) {
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer', bodyLimit: 128 * 1024 * 1024 },
    (_req, body, done) => {
      try {
        done(null, JSON.parse(body.toString('utf8')))
      } catch (err) {
        done(err)
      }
    },
  )
  let publishes = 0
  const durableWrite = async (dir, name, data) => {
    const handle = await open(join(dir, `${name}.tmp`), 'wx')
    try {
      await handle.writeFile(data)
      await handle.sync()
    } finally {
      await handle.close()
    }
    await rename(join(dir, `${name}.tmp`), join(dir, name))
    const folder = await open(dir, 'r')
    await folder.sync()
    await folder.close()
  }
  app.put('/publish', async (req) => {
    const dir = join(publishDir, String(++publishes))
    const files = [
      { path: 'SKILL.md', data: Buffer.from(req.body.body, 'utf8') },
      ...req.body.files.map((f) => ({ path: f.path, data: Buffer.from(f.content, 'base64') })),
    ]
    await Promise.all(
      files.map(async (f, i) => {
        await mkdir(join(dir, String(i)), { recursive: true })
        await durableWrite(join(dir, String(i)), 'blob', f.data)
      }),
    )
    return { files: files.length }
  })
}
await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`bare serving https://127.0.0.1:${app.server.address().port}\n`)
const stop = () => void app.close().finally(() => process.exit(0))
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
