/**
 * The fleet page in Debian's Chromium against the real daemon (host "a", joined by configuration to a real
 * single-node nats-server). The other members are simulated in the test with their own NATS users: "b" writes its
 * presence and answers calls (its containers), "c" said it stopped, so it is down. An admin sees the overview, makes
 * a join code, switches to b and reads its containers, then to c (an error: it does not answer); a viewer sees the
 * same overview with no join code button.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '@hostd/sdk/testing'
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../../../test/support/browser.ts'
import { startCluster, type NatsCluster } from './support/cluster.ts'
import { ensureTestAccount } from '../../../test/support/unix-user.ts'

const member = (host: string) => ({ user: host, password: `pw-${host}`, host })

describe('fleet page', { timeout: 120_000 }, () => {
  let cluster: NatsCluster
  let ui: UiHarness
  const peers: NatsConnection[] = []
  const beats: NodeJS.Timeout[] = []

  const presence = (host: string, status: 'up' | 'stopped', inventory: Record<string, unknown>) =>
    JSON.stringify({ host, publicKey: 'unused', version: '0.1.0', status, inventory })

  beforeAll(async () => {
    cluster = await startCluster(1, [member('a'), member('b'), member('c')])
    const account = await ensureTestAccount()
    ui = await startUi({
      env: {
        HOSTD_BUILTIN_PLUGINS: 'fleet,terminal',
        HOSTD_TERMINAL_USER: account.name,
        HOSTD_FLEET_NATS_URL: cluster.urls,
        HOSTD_FLEET_NATS_USER: 'a',
        HOSTD_FLEET_NATS_PASSWORD: 'pw-a',
        HOSTD_FLEET_HOST: 'a',
      },
    })
    // A creates the presence bucket; the simulated members then write theirs.
    await eventually(async () => {
      const res = await ui.daemon.fetch('/api/hosts', { headers: { authorization: `Bearer ${ui.adminToken}` } })
      return ((await res.json()) as { hosts: unknown[] }).hosts.length === 1
    }, 100)
    const { Kvm } = await import('@nats-io/kv')
    for (const host of ['b', 'c']) {
      const nc = await connect({ servers: cluster.urls, user: host, pass: `pw-${host}`, inboxPrefix: `_INBOX_${host}` })
      peers.push(nc)
      const kv = await new Kvm(nc).open('hostd_fleet')
      const used = (share: number, total: number) => ({ used: Math.round(share * total), total })
      const write = () =>
        kv.put(
          host,
          host === 'b'
            ? presence('b', 'up', {
                cpu: 0.42,
                memory: used(0.63, 8 * 2 ** 30),
                disk: used(0.81, 500 * 2 ** 30),
                alerts: 2,
                updates: 14,
              })
            : presence('c', 'stopped', {
                cpu: 0.05,
                memory: used(0.2, 4 * 2 ** 30),
                disk: null,
                alerts: 0,
                updates: 0,
              }),
        )
      await write()
      // b heartbeats as a member does; c said it stopped and stays silent.
      if (host === 'b') beats.push(setInterval(() => void write().catch(() => {}), 2000))
    }
    // b answers calls as a member would: its containers.
    peers[0]!.subscribe('hostd.fleet.req.b.*', {
      callback: (_err, msg) => {
        const kind = msg.headers?.get('Hostd-Kind')
        if (kind === 'sock') return // the page's socket: credit and close from a
        if (kind === 'socket') {
          // A container's logs socket: opened, then one log frame on the socket's subject (socket-bridge.ts).
          const opened = natsHeaders()
          opened.set('Hostd-Status', '101')
          msg.respond(new Uint8Array(), { headers: opened })
          const frame = natsHeaders()
          frame.set('Hostd-Op', 'frame')
          frame.set('Hostd-Seq', '0')
          const log = JSON.stringify({ type: 'log', stream: 'stdout', data: 'hello from b\n' })
          const subject = `hostd.fleet.stream.a.b.${msg.headers!.get('Hostd-Stream')}`
          peers[0]!.publish(subject, new TextEncoder().encode(log), { headers: frame })
          return
        }
        const h = natsHeaders()
        h.set('Hostd-Status', '200')
        h.set('content-type', 'application/json')
        const items = [
          { id: '1', name: 'web', image: 'nginx:1.27', state: 'running' },
          { id: '2', name: 'db', image: 'postgres:16', state: 'exited' },
        ]
        msg.respond(new TextEncoder().encode(JSON.stringify({ engine: { available: true }, items })), { headers: h })
      },
    })
  }, 120_000)
  afterAll(async () => {
    for (const beat of beats) clearInterval(beat)
    for (const nc of peers) await nc.close()
    await ui?.close()
    await cluster?.stop()
  })

  it('shows every member, makes a join code, switches hosts and reads a member through this host', async () => {
    const page = await ui.open('admin', '/fleet')
    const table = page.getByRole('table', { name: 'Members' })
    const row = (host: string) => table.getByRole('row').filter({ has: page.getByRole('link', { name: host }) })
    await expect.poll(() => row('b').textContent()).toMatch(/63\s?%/)
    await expect.poll(() => row('a (this host)').textContent()).toContain('up')
    expect(await row('b').textContent()).toMatch(/up.*42\s?%.*63\s?%.*81\s?%.*2.*14/)
    expect(await row('c').textContent()).toContain('down')
    await expectAccessible(page, 'fleet overview')
    await screenshot(page, 'fleet-overview')

    await page.getByRole('button', { name: 'Make a join code' }).click()
    const dialog = page.getByRole('dialog', { name: 'Make a join code' })
    await dialog.getByRole('textbox', { name: "New host's name" }).fill('d')
    await dialog.getByRole('textbox', { name: 'Its NATS user' }).fill('d')
    await dialog.getByLabel('Its NATS password').fill('pw-d')
    await dialog.getByRole('button', { name: 'Make the code' }).click()
    await expect.poll(() => dialog.getByRole('textbox', { name: 'Join code' }).inputValue()).toMatch(/^hostd-join-1\./)
    await screenshot(page, 'fleet-join-code')
    await dialog.getByRole('button', { name: 'Done' }).click()

    await row('b').getByRole('link', { name: 'b' }).click()
    const containers = page.getByRole('region', { name: 'Containers' })
    await containers.getByRole('cell', { name: 'web', exact: true }).waitFor()
    await expect.poll(() => page.getByRole('region', { name: 'State' }).textContent()).toContain('Updates waiting14')
    await expectAccessible(page, 'fleet host b')
    await screenshot(page, 'fleet-host')
    await page.getByRole('combobox', { name: 'Host' }).selectOption('c')
    await containers.getByText('The containers of c could not be read').waitFor()
    await expect.poll(() => containers.textContent()).toContain('did not answer')
    await screenshot(page, 'fleet-host-down')

    // b's container logs, followed through this host's socket to b's.
    await page.getByRole('combobox', { name: 'Host' }).selectOption('b')
    await containers.getByRole('button', { name: 'Logs of web' }).click()
    const logs = page.getByRole('dialog', { name: 'Logs of web on b' })
    await logs.getByRole('log', { name: 'Logs of web' }).getByText('hello from b').waitFor()
    await logs.getByRole('status').getByText('Following').waitFor()
    await screenshot(page, 'fleet-logs')
    await logs.getByRole('button', { name: 'Close' }).click()

    // A member's terminal from its host page: this host's terminal page, the socket carried by the fleet plugin
    // (here the member is this host itself, a, so the shell is real: /api/hosts/a/api/terminal).
    await page.getByRole('combobox', { name: 'Host' }).selectOption('a')
    await page.getByRole('button', { name: 'Terminal' }).click()
    await page.getByRole('heading', { name: 'Terminal on a', level: 1 }).waitFor()
    const toggle = page.getByRole('switch', { name: 'Screen reader mode' })
    if (!(await toggle.isChecked())) await toggle.check()
    await page.getByRole('status').getByText('Connected').waitFor()
    const lines = page.getByRole('region', { name: 'Terminal' }).getByRole('listitem')
    await lines
      .filter({ hasText: /\$\s*$/ })
      .first()
      .waitFor()
    await page.getByRole('textbox', { name: 'Terminal input' }).focus()
    await page.keyboard.type('echo $((6*7))')
    await page.keyboard.press('Enter')
    await lines
      .filter({ hasText: /^\s*42\s*$/ })
      .first()
      .waitFor()
    await page.getByText(/A login shell on host a as hostd-test/).waitFor()
    await screenshot(page, 'fleet-terminal')
    await page.goBack()
    await page.setViewportSize({ width: 390, height: 844 })
    await page.getByRole('button', { name: 'Terminal' }).waitFor()
    await screenshot(page, 'fleet-host-phone')

    const viewer = await ui.open('viewer', '/fleet')
    await viewer.getByRole('table', { name: 'Members' }).getByRole('link', { name: 'b' }).waitFor()
    expect(await viewer.getByRole('button', { name: 'Make a join code' }).count()).toBe(0)
    await viewer.setViewportSize({ width: 390, height: 844 })
    await viewer.getByRole('link', { name: 'b' }).first().waitFor()
    await screenshot(viewer, 'fleet-overview-phone')
    ui.assertNoCspViolations()
  })
})
