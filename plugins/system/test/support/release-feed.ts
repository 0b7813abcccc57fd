import { createHash, sign, type KeyObject } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { join } from 'node:path'
import { c as tar } from 'tar'
import { signedMessage } from '../../src/updates.ts'

/**
 * A STAND-IN release feed: a loopback HTTP server playing the project's release site (which does not exist here),
 * serving `/feed.json` and the archive it names. Tests change `state` to offer other feeds or archives, or hold
 * the archive back for `archiveDelayMs` (a slow download, so a page's progress can be seen).
 */
export interface ReleaseFeed {
  url: string
  state: { feed: Record<string, unknown>; archive: Buffer; archiveDelayMs: number }
  close(): Promise<void>
}

export async function startReleaseFeed(): Promise<ReleaseFeed> {
  const state = { feed: {} as Record<string, unknown>, archive: Buffer.alloc(0), archiveDelayMs: 0 }
  const server: Server = createServer((req, res) => {
    if (req.url === '/feed.json') res.setHeader('content-type', 'application/json').end(JSON.stringify(state.feed))
    else if (req.url?.endsWith('.tgz'))
      setTimeout(() => res.setHeader('content-type', 'application/gzip').end(state.archive), state.archiveDelayMs)
    else res.writeHead(404).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/feed.json`,
    state,
    close: () => new Promise((r) => server.close(() => r())),
  }
}

/** A release archive (.tgz) holding VERSION and kernel/main.ts, built under `dir`. */
export async function releaseArchive(dir: string, version: string): Promise<Buffer> {
  const tree = join(dir, `tree-${version}`)
  await mkdir(join(tree, 'kernel'), { recursive: true })
  await writeFile(join(tree, 'VERSION'), version)
  await writeFile(join(tree, 'kernel', 'main.ts'), `console.log('hostd ${version}')\n`)
  const chunks: Buffer[] = []
  for await (const chunk of tar({ gzip: true, cwd: tree }, ['VERSION', 'kernel'])) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/** The feed for `archive` as `version`, signed with `key` (Ed25519). */
export function signedFeed(version: string, archive: Buffer, key: KeyObject, url = `/hostd-${version}.tgz`) {
  const sha256 = createHash('sha256').update(archive).digest('hex')
  return {
    version,
    notes: `Release ${version}: faster and safer.`,
    url,
    sha256,
    signature: sign(null, signedMessage(version, sha256), key).toString('base64'),
  }
}
