/**
 * Outbound network (issue 26): a sandboxed plugin has a network namespace of its own, with only its own loopback,
 * unless it declares `permissions.network` and an admin grants it (a folder dropped in by hand is granted what it
 * declares). Probed against a TCP server of the test on the host's loopback.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { createServer, type Server } from 'node:net'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FIXTURES, startIsolationDaemon, type IsolationDaemon } from './support.ts'

let d: IsolationDaemon
let server: Server
let port: number
beforeAll(async () => {
  // The probe closes as soon as it is connected: a reset on the server's side is expected, not an error.
  server = createServer((socket) => socket.on('error', () => undefined).end('hello'))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  port = (server.address() as { port: number }).port
  d = await startIsolationDaemon({ 'net-probe': join(FIXTURES, 'net-probe') })
  await d.until('net-probe', (e) => e.state === 'active')
  // The same folder with the granted entry, as a second plugin.
  const granted = join(await mkdtemp(join(tmpdir(), 'net-granted-')), 'net-granted')
  await cp(join(FIXTURES, 'net-probe'), granted, { recursive: true })
  const pkg = JSON.parse(await readFile(join(granted, 'package.json'), 'utf8'))
  await writeFile(join(granted, 'package.json'), JSON.stringify({ ...pkg, hostd: { entry: 'src/granted.ts' } }))
  await d.drop(granted, 'net-granted')
  await rm(dirname(granted), { recursive: true, force: true })
  await d.until('net-granted', (e) => e.state === 'active')
}, 60_000)
afterAll(async () => {
  await d?.close()
  server?.close()
})

describe('outbound network of a sandboxed plugin', () => {
  it('without the permission: the host’s loopback is not its own, nothing answers', async () => {
    const res = await d.api(`/api/net-probe?port=${port}`)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ connected: false })
  })

  it('declared and granted: it reaches the host’s network', async () => {
    expect((await d.api('/api/extensions')).body.find((e: { id: string }) => e.id === 'net-granted')).toMatchObject({
      permissions: { network: true },
    })
    const res = await d.api(`/api/net-granted?port=${port}`)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ connected: true })
  })
})
