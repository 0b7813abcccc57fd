import { definePlugin, HostdError, type ServiceExposure } from '@hostd/sdk'
import { describe, expect, it } from 'vitest'
import { limitedService, methodProblem } from './service-access.ts'

const exposure: ServiceExposure = { read: ['list'], write: ['remove'] }
const plugin = (access: 'read' | 'write') =>
  definePlugin({
    id: 'reader',
    version: '1.0.0',
    kernel: '^1.3.0',
    permissions: { services: { 'other.things': access } },
  })

describe('a third-party plugin’s view of another plugin’s service', () => {
  const calls: string[] = []
  const service = {
    list: async () => {
      calls.push('list')
      return ['a']
    },
    remove: async (name: string) => {
      calls.push(`remove ${name}`)
      return true
    },
    wipe: async () => {
      calls.push('wipe')
      return true
    },
    secret: 'not a method',
  }

  it('with read access: the read methods go through, a write method and an unexposed one throw 403', async () => {
    const view = limitedService(plugin('read'), 'other.things', service, () => exposure) as typeof service
    expect(await view.list()).toEqual(['a'])
    expect(() => view.remove('x')).toThrow(HostdError)
    expect(() => view.remove('x')).toThrow(
      /has read access .* declare permissions: \{ services: \{ 'other.things': 'write'/,
    )
    expect(() => view.wipe()).toThrow(/does not let third-party plugins call wipe/)
    expect(view.secret).toBeTypeOf('function') // unexposed: a refusal, never the provider's field
    expect(Object.keys(view)).toEqual([])
    expect((view as unknown as { then?: unknown }).then).toBeUndefined()
    expect(calls).toEqual(['list'])
  })

  it('with write access: both lists go through, nothing else', async () => {
    const view = limitedService(plugin('write'), 'other.things', service, () => exposure) as typeof service
    expect(await view.remove('x')).toBe(true)
    expect(() => view.wipe()).toThrow(/does not let third-party plugins call wipe/)
  })

  it('without exposure (a provider that lists nothing), or undeclared, nothing goes through', () => {
    expect(methodProblem(plugin('write'), 'other.things', 'list', undefined)).toMatch(/does not let/)
    expect(methodProblem(plugin('write'), 'else.things', 'list', exposure)).toMatch(
      /did not declare the service "else.things"/,
    )
  })

  it('reads the provider’s exposure on each call (an upgrade of the provider is seen at once)', async () => {
    let current: ServiceExposure = {}
    const view = limitedService(plugin('read'), 'other.things', service, () => current) as typeof service
    expect(() => view.list()).toThrow(/does not let/)
    current = exposure
    expect(await view.list()).toEqual(['a'])
  })
})
