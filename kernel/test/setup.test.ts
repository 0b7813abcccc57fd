import { afterEach, describe, expect, it } from 'vitest'
import { bind, createServiceToken, definePlugin, tokens } from '@hostd/sdk'
import { startTestKernel, type TestKernel } from '../src/testing.ts'

const loadToken = createServiceToken<{ load: number }>('test.stateful.load')

describe("a plugin's setup", () => {
  let t: TestKernel | undefined
  afterEach(() => t?.close())

  it('runs once per load, after deps resolve and before the other hooks, each of which gets its result', async () => {
    const calls: string[] = []
    let loads = 0
    const plugin = definePlugin({
      id: 'stateful',
      version: '1.0.0',
      kernel: '^1.1.0',
      deps: { log: tokens.logger },
      setup: async ({ log }) => {
        calls.push('setup')
        return { load: ++loads, log }
      },
      routes: (r, _deps, state) => {
        calls.push(`routes ${state.load}`)
        r.get('/api/stateful', { role: 'viewer' }, () => ({ load: state.load }))
      },
      sockets: (_s, _deps, state) => {
        calls.push(`sockets ${state.load}`)
      },
      provides: (_deps, state) => {
        calls.push(`provides ${state.load}`)
        return [bind(loadToken, { load: state.load })]
      },
      start: (_deps, state) => {
        calls.push(`start ${state.load}`)
      },
      stop: (_deps, state) => {
        calls.push(`stop ${state.load}`)
      },
    })
    t = await startTestKernel({ plugins: [plugin] })
    expect(calls).toEqual(['setup', 'routes 1', 'sockets 1', 'provides 1', 'start 1'])
    expect((await t.inject({ url: '/api/stateful', as: 'viewer' })).json()).toEqual({ load: 1 })
    expect(t.kernel.registry.stateOf(plugin)).toMatchObject({ load: 1 })

    await t.kernel.registry.disable('stateful')
    expect(calls.at(-1)).toBe('stop 1')
    expect(t.kernel.registry.stateOf(plugin)).toBeUndefined()
    await t.kernel.registry.enable('stateful')
    expect(calls.slice(6)).toEqual(['setup', 'routes 2', 'sockets 2', 'provides 2', 'start 2'])
    expect((await t.inject({ url: '/api/stateful', as: 'viewer' })).json()).toEqual({ load: 2 })
  })

  it('fails the load when setup throws: no route served, no stop', async () => {
    const calls: string[] = []
    const plugin = definePlugin({
      id: 'broken-setup',
      version: '1.0.0',
      kernel: '^1.1.0',
      setup: (): { ready: boolean } => {
        throw new Error('the store is unreadable')
      },
      routes: (r) => r.get('/api/broken-setup', { role: 'viewer' }, () => ({})),
      stop: () => {
        calls.push('stop')
      },
    })
    t = await startTestKernel({ plugins: [plugin] })
    expect(t.kernel.registry.find('broken-setup')).toMatchObject({
      state: 'failed',
      reason: 'the store is unreadable',
    })
    expect((await t.inject({ url: '/api/broken-setup', as: 'viewer' })).statusCode).toBe(404)
    expect(calls).toEqual([])
  })
})
