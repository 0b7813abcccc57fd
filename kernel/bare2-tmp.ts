import Fastify from 'fastify'
import { readFileSync } from 'node:fs'
const [cert, key, mode] = process.argv.slice(2)
const app = Fastify({ logger: false, https: { cert: readFileSync(cert!), key: readFileSync(key!), minVersion: 'TLSv1.2' } })
const body = { id: '0f7a4f9e-6a59-4b36-9a57-3c7c2b0f1b11', username: 'admin', role: 'admin', disabled: false, twoFactor: false }
app.get('/api/auth/me', async (_req, reply) => {
  if (mode === 'headers') { reply.header('x-frame-options', 'DENY'); reply.header('content-security-policy', "frame-ancestors 'none'"); reply.header('x-content-type-options', 'nosniff'); reply.header('referrer-policy', 'no-referrer') }
  return mode === 'small' ? { hello: 'world' } : body
})
await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`bare serving https://127.0.0.1:${(app.server.address() as any).port}\n`)
