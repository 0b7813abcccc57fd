import { afterEach, describe, expect, it } from 'vitest'
import { startTestKernel } from '@hostd/sdk/testing'
import { configFromEnv } from '../src/config.ts'
import { terminalPlugin } from '../src/index.ts'

describe('terminal settings', () => {
  afterEach(() => {
    delete process.env.HOSTD_TERMINAL_MAX_SESSIONS
  })

  it('has defaults, and reads each variable', () => {
    expect(configFromEnv({})).toEqual({ user: null, maxSessions: 5, idleSeconds: 3600 })
    expect(
      configFromEnv({
        HOSTD_TERMINAL_USER: 'alice',
        HOSTD_TERMINAL_MAX_SESSIONS: '2',
        HOSTD_TERMINAL_IDLE_SECONDS: '0',
      }),
    ).toEqual({ user: 'alice', maxSessions: 2, idleSeconds: 0 })
  })

  it('refuses bad values with a message naming the variable', () => {
    expect(() => configFromEnv({ HOSTD_TERMINAL_USER: 'alice;id' })).toThrow(/HOSTD_TERMINAL_USER/)
    expect(() => configFromEnv({ HOSTD_TERMINAL_USER: '-root' })).toThrow(/HOSTD_TERMINAL_USER/)
    for (const bad of ['0', '101', '2.5', 'five'])
      expect(() => configFromEnv({ HOSTD_TERMINAL_MAX_SESSIONS: bad }), bad).toThrow(/HOSTD_TERMINAL_MAX_SESSIONS/)
    expect(() => configFromEnv({ HOSTD_TERMINAL_IDLE_SECONDS: '-5' })).toThrow(/HOSTD_TERMINAL_IDLE_SECONDS/)
  })

  it("a bad setting fails the plugin's load with that message", async () => {
    process.env.HOSTD_TERMINAL_MAX_SESSIONS = 'lots'
    const t = await startTestKernel({ plugins: [terminalPlugin()] })
    try {
      const entry = (await t.inject({ url: '/api/extensions', as: 'admin' }))
        .json()
        .find((p: any) => p.id === 'terminal')
      expect(entry).toMatchObject({ state: 'failed' })
      expect(entry.error).toMatch(/HOSTD_TERMINAL_MAX_SESSIONS must be an integer/)
    } finally {
      await t.close()
    }
  })
})
