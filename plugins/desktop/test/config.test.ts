import { afterEach, describe, expect, it } from 'vitest'
import { startTestKernel } from '@hostd/sdk/testing'
import { configFromEnv, formatTarget, parseTarget } from '../src/config.ts'
import { desktopPlugin } from '../src/index.ts'

describe('HOSTD_DESKTOP_VNC and HOSTD_DESKTOP_IDLE_SECONDS', () => {
  afterEach(() => {
    delete process.env.HOSTD_DESKTOP_VNC
  })

  it('takes host:port with an IPv4 address, a host name or a bracketed IPv6 address', () => {
    expect(configFromEnv({})).toEqual({ target: { host: '127.0.0.1', port: 5900 }, idleSeconds: 3600 })
    expect(parseTarget('vnc.lan:5901')).toEqual({ host: 'vnc.lan', port: 5901 })
    expect(parseTarget('[::1]:5900')).toEqual({ host: '::1', port: 5900 })
    expect(formatTarget(parseTarget('[::1]:5900'))).toBe('[::1]:5900')
    expect(configFromEnv({ HOSTD_DESKTOP_IDLE_SECONDS: '0' }).idleSeconds).toBe(0)
  })

  it('refuses anything else with a message naming the variable', () => {
    for (const bad of [
      '127.0.0.1',
      ':5900',
      '127.0.0.1:0',
      '127.0.0.1:65536',
      '::1:5900',
      '[127.0.0.1]:5900',
      'a b:1',
      'host:59x',
      'http://h:5900',
      '-x:5900',
    ]) {
      expect(() => parseTarget(bad), bad).toThrow(/HOSTD_DESKTOP_VNC/)
    }
    expect(() => configFromEnv({ HOSTD_DESKTOP_IDLE_SECONDS: '-1' })).toThrow(/HOSTD_DESKTOP_IDLE_SECONDS/)
  })

  it("a bad setting fails the plugin's load with that message, and its route is not served", async () => {
    process.env.HOSTD_DESKTOP_VNC = 'not a target'
    const t = await startTestKernel({ plugins: [desktopPlugin()] })
    try {
      const entry = (await t.inject({ url: '/api/extensions', as: 'admin' }))
        .json()
        .find((p: any) => p.id === 'desktop')
      expect(entry).toMatchObject({ state: 'failed' })
      expect(entry.error).toMatch(/HOSTD_DESKTOP_VNC "not a target" is not host:port/)
      expect((await t.inject({ url: '/api/system/desktop', as: 'admin' })).statusCode).toBe(404)
    } finally {
      await t.close()
    }
  })
})
