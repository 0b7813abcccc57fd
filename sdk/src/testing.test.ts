/**
 * The harness's service overrides (`services: [bind(token, fake)]`) and shared helpers. Each override test has its
 * control: the same plugin without the fake gets the real service, so a harness that ignored the fake would fail.
 */
import { createServer } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type AuditEvent,
  bind,
  createServiceToken,
  definePlugin,
  errors,
  type HelperClient,
  Type,
  tokens,
} from './index.ts'
import { eventually, freePort, startTestKernel, type TestKernel } from './testing.ts'

interface Greeter {
  greet(name: string): string
}
const greeterToken = createServiceToken<Greeter>('test.greeter')
const Answer = Type.Object({ text: Type.String(), optional: Type.Optional(Type.String()) })

/** Provides the real greeter, as another plugin would. */
const greeterPlugin = definePlugin({
  id: 'greeter',
  version: '1.0.0',
  kernel: '^1.0.0',
  provides: () => [bind(greeterToken, { greet: (name: string) => `real hello, ${name}` })],
})

/** Uses a kernel service (the helper), another plugin's service (hard and optional) and the audit log. */
const consumerPlugin = definePlugin({
  id: 'consumer',
  version: '1.0.0',
  kernel: '^1.0.0',
  dependsOn: { greeter: '^1.0.0' },
  deps: { greeter: greeterToken, helper: tokens.helper, audit: tokens.audit, optional: tokens.optional },
  routes: (r, { greeter, helper, audit, optional }) => {
    r.get('/api/consumer/greet', { role: 'viewer', schema: { response: { 200: Answer } } }, () => ({
      text: greeter.greet('viewer'),
      optional: optional.get(greeterToken)?.greet('optional'),
    }))
    r.post(
      '/api/consumer/reboot',
      { role: 'admin', needs: ['helper'], schema: { response: { 200: Answer } } },
      async (req) => {
        const answer = await helper.call<{ text: string }>('power.reboot', { delay: 0 })
        await audit.record({ action: 'consumer.reboot', target: 'host' }, req)
        return answer
      },
    )
  },
})

/** A root helper that is there and records what it was asked; `fail` makes every call throw. */
function fakeHelper(fail?: Error): HelperClient & { calls: { action: string; args?: Record<string, unknown> }[] } {
  const calls: { action: string; args?: Record<string, unknown> }[] = []
  return {
    calls,
    available: async () => true,
    call: async <T>(action: string, args?: Record<string, unknown>) => {
      calls.push({ action, args })
      if (fail) throw fail
      return { text: `faked ${action}` } as T
    },
  }
}

describe('startTestKernel({ services })', () => {
  let t: TestKernel | undefined
  afterEach(async () => {
    await t?.close()
    t = undefined
  })

  it('hands the plugin a fake kernel service instead of the real one', async () => {
    const helper = fakeHelper()
    t = await startTestKernel({ plugins: [greeterPlugin, consumerPlugin], services: [bind(tokens.helper, helper)] })
    const res = await t.inject({ method: 'POST', url: '/api/consumer/reboot', as: 'admin' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ text: 'faked power.reboot' })
    expect(helper.calls).toEqual([{ action: 'power.reboot', args: { delay: 0 } }])
  })

  it('without the fake, the same route meets the real, absent helper (423)', async () => {
    t = await startTestKernel({ plugins: [greeterPlugin, consumerPlugin] })
    const res = await t.inject({ method: 'POST', url: '/api/consumer/reboot', as: 'admin' })
    expect(res.statusCode).toBe(423)
    expect(res.json().error).toBe('HOSTD_HELPER_UNAVAILABLE')
  })

  it("passes a fake's failure through as the plugin's answer", async () => {
    const helper = fakeHelper(errors.conflict('another package job is running'))
    t = await startTestKernel({ plugins: [greeterPlugin, consumerPlugin], services: [bind(tokens.helper, helper)] })
    const res = await t.inject({ method: 'POST', url: '/api/consumer/reboot', as: 'admin' })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: 'HOSTD_RESOURCE_CONFLICT', message: 'another package job is running' })
  })

  it("wins over another plugin's service, in deps and in optional.get", async () => {
    const fake: Greeter = { greet: (name) => `fake hello, ${name}` }
    t = await startTestKernel({ plugins: [greeterPlugin, consumerPlugin], services: [bind(greeterToken, fake)] })
    const res = await t.inject({ url: '/api/consumer/greet', as: 'viewer' })
    expect(res.json()).toEqual({ text: 'fake hello, viewer', optional: 'fake hello, optional' })
  })

  it("without the fake, the plugin gets its provider's service", async () => {
    t = await startTestKernel({ plugins: [greeterPlugin, consumerPlugin] })
    const res = await t.inject({ url: '/api/consumer/greet', as: 'viewer' })
    expect(res.json()).toEqual({ text: 'real hello, viewer', optional: 'real hello, optional' })
  })

  it('sends what the plugin audits to a fake audit service, not to the kernel log', async () => {
    const recorded: AuditEvent[] = []
    const audit = { record: async (event: AuditEvent) => void recorded.push(event) }
    t = await startTestKernel({
      plugins: [greeterPlugin, consumerPlugin],
      services: [bind(tokens.helper, fakeHelper()), bind(tokens.audit, audit)],
    })
    expect((await t.inject({ method: 'POST', url: '/api/consumer/reboot', as: 'admin' })).statusCode).toBe(200)
    expect(recorded).toEqual([{ action: 'consumer.reboot', target: 'host' }])
    const log = (await t.inject({ url: '/api/audit?range=all&limit=500', as: 'admin' })).json().items
    expect(log.map((e: { action: string }) => e.action)).not.toContain('consumer.reboot')
  })
})

describe('shared test helpers', () => {
  it('eventually resolves with the first truthy answer, sync or async', async () => {
    let polls = 0
    expect(await eventually(() => (++polls >= 3 ? `after ${polls}` : null), 1)).toBe('after 3')
    expect(await eventually(async () => (++polls >= 5 ? polls : false), 1)).toBe(5)
  })

  it('freePort gives a loopback port that can be listened on', async () => {
    const port = await freePort()
    expect(port).toBeGreaterThan(0)
    const server = createServer()
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve))
    await new Promise((resolve) => server.close(resolve))
  })
})
