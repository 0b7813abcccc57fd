/** Test helpers: catalog entries, a source folder, and a local HTTPS server with its own certificate. */
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import type { ServerResponse } from 'node:http'
import { createServer, type Server } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

export function catalogFile(apps: unknown[], name = 'test catalog'): string {
  return JSON.stringify({ format: 'hostd-catalog/1', name, apps }, null, 2)
}

export function app(id: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    version: '1.0.0',
    title: `App ${id}`,
    categories: ['Testing'],
    runSpec: { image: 'example/app:1.0' },
    ...extra,
  }
}

export interface LocalHttps {
  url: string
  ca: string
  /** What the next requests get; `hang` never answers. */
  answer: (res: ServerResponse, path: string) => void
  close(): Promise<void>
}

/** An HTTPS server on loopback with a fresh self-signed certificate for 127.0.0.1 (its PEM is the CA to trust). */
export async function startHttps(): Promise<LocalHttps> {
  const dir = await mkdtemp(join(tmpdir(), 'hostd-catalog-tls-'))
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    join(dir, 'key.pem'),
    '-out',
    join(dir, 'cert.pem'),
    '-days',
    '1',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
  ])
  const [key, cert] = await Promise.all([
    readFile(join(dir, 'key.pem'), 'utf8'),
    readFile(join(dir, 'cert.pem'), 'utf8'),
  ])
  await rm(dir, { recursive: true, force: true })
  const state: LocalHttps = {
    url: '',
    ca: cert,
    answer: (res) => res.end('{}'),
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
  const server: Server = createServer({ key, cert }, (req, res) => state.answer(res, req.url ?? '/'))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  state.url = `https://127.0.0.1:${(server.address() as { port: number }).port}`
  return state
}

export async function sourceDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'hostd-catalog-src-'))
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text)
  return dir
}
