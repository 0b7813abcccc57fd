import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync, realpathSync } from 'node:fs'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { createSystemPlugin } from '../src/index.ts'

/** /api/system/info, /network and /settings on this real machine, each checked against an independent tool. */
const sh = (program: string, ...args: string[]) => execFileSync(program, args, { encoding: 'utf8' }).trim()

describe('system plugin: host facts', () => {
  let t: TestKernel
  beforeAll(async () => {
    t = await startTestKernel({ plugins: [createSystemPlugin()] })
  })
  afterAll(() => t.close())

  it('reports hardware and OS facts that agree with uname, nproc and free', async () => {
    const res = await t.inject({ url: '/api/system/info', as: 'viewer' })
    expect(res.statusCode, res.body).toBe(200)
    const info = res.json()
    expect(info.hostname).toBe(sh('hostname'))
    expect(info.kernel.release).toBe(sh('uname', '-r'))
    const machine = sh('uname', '-m')
    expect(info.arch).toBe(({ x86_64: 'x64', aarch64: 'arm64' } as Record<string, string>)[machine] ?? machine)
    expect(info.cpu.threads).toBe(Number(sh('nproc', '--all')))
    const memTotal = Number(sh('free', '-b').split('\n')[1]!.split(/\s+/)[1])
    expect(info.memory.totalBytes).toBe(memTotal)
    expect(info.os.prettyName).toBe(/PRETTY_NAME="(.*)"/.exec(readFileSync('/etc/os-release', 'utf8'))![1])
    expect(info.uptimeSeconds).toBeGreaterThan(0)
  })

  it('reports interfaces, addresses, MACs, link state and the default route as `ip` does', async () => {
    // Other test files add and remove bridges while this runs: compare a snapshot taken between two identical
    // readings of `ip`, retried until the host held still.
    let net: any
    let ipText = ''
    for (let attempt = 0; attempt < 20; attempt++) {
      const before = sh('ip', '-j', 'addr')
      const res = await t.inject({ url: '/api/system/network', as: 'viewer' })
      expect(res.statusCode, res.body).toBe(200)
      net = res.json()
      ipText = sh('ip', '-j', 'addr')
      if (before === ipText) break
    }
    const ip = JSON.parse(ipText) as {
      ifname: string
      address: string
      operstate: string
      addr_info: { family: string; local: string; prefixlen: number }[]
    }[]
    expect(net.interfaces.map((i: { name: string }) => i.name).sort()).toEqual(ip.map((i) => i.ifname).sort())
    for (const link of ip) {
      const mine = net.interfaces.find((i: { name: string }) => i.name === link.ifname)
      expect(mine.mac, link.ifname).toBe(link.address)
      expect(mine.state.toUpperCase(), link.ifname).toBe(link.operstate)
      const v4 = link.addr_info.filter((a) => a.family === 'inet').map((a) => `${a.local}/${a.prefixlen}`)
      expect(
        mine.addresses
          .filter((a: { family: string }) => a.family === 'ipv4')
          .map((a: { address: string; prefix: number }) => `${a.address}/${a.prefix}`),
        link.ifname,
      ).toEqual(v4)
    }
    const route = JSON.parse(sh('ip', '-j', '-4', 'route', 'show', 'default')) as { gateway: string; dev: string }[]
    expect(net.defaultRoute).toEqual(route[0] ? { gateway: route[0].gateway, interface: route[0].dev } : null)
    const resolv = readFileSync('/etc/resolv.conf', 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('nameserver'))
      .map((l) => l.split(/\s+/)[1])
    expect(net.dnsServers).toEqual(resolv)
  })

  it('reports a read-only settings snapshot that agrees with the host', async () => {
    const res = await t.inject({ url: '/api/system/settings', as: 'viewer' })
    expect(res.statusCode, res.body).toBe(200)
    const settings = res.json()
    expect(settings.hostname).toBe(sh('hostname'))
    expect(realpathSync('/etc/localtime').endsWith(`/${settings.timeZone}`)).toBe(true)
    const sshdRunning = spawnSync('pgrep', ['-x', 'sshd']).status === 0
    expect(settings.ssh.running).toBe(sshdRunning)
    expect(settings.hostdUpdates).toEqual({ feedConfigured: false, checkEveryHours: 24 })
    expect(typeof settings.autoUpdate.unattendedUpgrades).toBe('boolean')
  })

  it('is for signed-in users only', async () => {
    for (const url of ['/api/system/info', '/api/system/network', '/api/system/settings']) {
      expect((await t.inject({ url })).statusCode).toBe(401)
    }
  })
})
