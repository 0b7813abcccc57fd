/**
 * The browser of the tests has a network namespace of its own (test/support/browser-netns.ts). Chromium fails the
 * loads it has in flight (ERR_NETWORK_CHANGED) whenever an address in its namespace comes or goes, and in a full run
 * other tests change the machine's all the time (Docker bridges, veths, namespaces). Here the daemon's UI is served
 * slowly, through a proxy that holds each new connection for a second, so loads are in flight for seconds; meanwhile
 * the test adds an interface with an address and deletes it, over and over, as starting a container does. With
 * Chromium in the machine's namespace (HOSTD_TEST_BROWSER_NETNS=0) both tests fail; in its own, they pass.
 */
import { execFile } from 'node:child_process'
import { createServer as createHttpServer } from 'node:http'
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startUi, type UiHarness } from '../support/browser.ts'

const run = promisify(execFile)
/** How long the proxy holds each new connection before it joins it to the daemon. */
const HOLD_MS = 1_000
/**
 * An interface of this run's own (at most 15 characters) and an address of the benchmarking range for it. A bridge,
 * as Docker adds (not every kernel has the dummy type; this machine's has not). The address is what Chromium reacts
 * to: an interface without one coming and going drops nothing.
 */
const IFACE = `hostd-t${process.pid}`
const ADDRESS = '198.18.0.1/32'

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}

/** Interfaces this test left in a run that was killed (hostd-t<pid of a process that is gone>), and its own. */
async function removeStaleInterfaces(): Promise<void> {
  const { stdout } = await run('ip', ['-o', 'link', 'show'])
  for (const [, name, pid] of stdout.matchAll(/^\d+: (hostd-t(\d+))[:@]/gm)) {
    let alive = Number(pid) !== process.pid
    try {
      if (alive) process.kill(Number(pid), 0)
    } catch (err) {
      alive = (err as NodeJS.ErrnoException).code === 'EPERM'
    }
    if (!alive) await run('ip', ['link', 'del', name!]).catch(() => undefined)
  }
}

/** Adds the interface, gives it an address, brings it up, deletes it; again and again until `stop()`. */
function churnInterfaces(): { stop(): Promise<number> } {
  let stopped = false
  const churn = (async () => {
    let changes = 0
    while (!stopped) {
      await run('ip', ['link', 'add', IFACE, 'type', 'bridge'])
      await run('ip', ['addr', 'add', ADDRESS, 'dev', IFACE])
      await run('ip', ['link', 'set', IFACE, 'up'])
      await new Promise((resolve) => setTimeout(resolve, 100))
      await run('ip', ['link', 'del', IFACE])
      changes++
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    return changes
  })()
  churn.catch(() => undefined) // a failed `ip` is thrown by stop()
  return {
    stop: () => {
      stopped = true
      return churn
    },
  }
}

describe("the browser's own network namespace", { timeout: 120_000 }, () => {
  let ui: UiHarness
  let slow: Server
  const held = new Set<Socket>()
  beforeAll(async () => {
    await removeStaleInterfaces()
    ui = await startUi()
    // The daemon's UI, each new connection held HOLD_MS before it reaches the daemon: a TLS handshake, and every load
    // queued behind it, stays in flight that long.
    slow = createServer((client) => {
      held.add(client)
      client.on('close', () => held.delete(client))
      client.on('error', () => undefined)
      setTimeout(() => {
        const daemon = createConnection({ port: ui.daemon.port, host: '127.0.0.1' })
        daemon.on('error', () => client.destroy())
        client.on('error', () => daemon.destroy())
        client.pipe(daemon).pipe(client)
      }, HOLD_MS)
    })
  }, 120_000)
  afterAll(async () => {
    await run('ip', ['link', 'del', IFACE]).catch(() => undefined)
    for (const socket of held) socket.destroy()
    slow?.close()
    await ui?.close()
  })

  it('loads a page slowly served while interfaces come and go on the machine, and no load fails', async () => {
    const port = await listen(slow)
    await ui.forward(port)
    const page = await ui.open('viewer', '/account')
    await page.getByRole('heading', { name: 'Your account' }).waitFor()
    const failed: string[] = []
    page.on('requestfailed', (request) => failed.push(`${request.url()} ${request.failure()?.errorText}`))

    // The same cookie (scoped to 127.0.0.1, not to a port) signs the slow origin in too.
    const churn = churnInterfaces()
    let changes = 0
    try {
      await page.goto(`https://127.0.0.1:${port}/account`) // not gotoRetrying: a retry would hide what this looks for
      await page.getByRole('heading', { name: 'Your account' }).waitFor()
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Overview' }).waitFor()
      await page.reload()
      await page.getByRole('heading', { name: 'Your account' }).waitFor()
    } finally {
      changes = await churn.stop()
    }
    expect(failed).toEqual([])
    // The load took seconds and the interface changed several times meanwhile.
    expect(changes).toBeGreaterThanOrEqual(5)
  })

  it('reaches a port of the machine only when it is forwarded', async () => {
    const server = createHttpServer((_req, res) => res.end('forwarded'))
    const port = await listen(server)
    try {
      const page = await ui.newPage()
      await expect(page.goto(`http://127.0.0.1:${port}/`)).rejects.toThrow(/ERR_CONNECTION_REFUSED/)
      await ui.forward(port)
      const again = await page.context().newPage() // the first one may still be showing its error page
      await again.goto(`http://127.0.0.1:${port}/`)
      expect(await again.locator('body').innerText()).toBe('forwarded')
      await page.context().close()
    } finally {
      server.close()
    }
  })
})
