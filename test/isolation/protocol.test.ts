/**
 * The channel between the kernel and an isolated plugin's process (sdk/src/isolated/protocol.ts) and what the kernel
 * checks of what crosses it (kernel/src/isolation): frames, the schema of every message, the definition and the
 * routes a plugin declares. In process, no sandbox: sandbox.test.ts and supervision.test.ts run the real thing.
 */
import { describe, expect, it } from 'vitest'
import { encodeFrame, FrameReader, originOf } from '../../sdk/src/isolated/protocol.ts'
import { childMessageProblem } from '../../kernel/src/isolation/channel.ts'
import pino from 'pino'
import { PluginIsolation } from '../../kernel/src/isolation/index.ts'
import { DEFAULT_ISOLATION } from '../../kernel/src/isolation/settings.ts'
import { manifestProblem, schemaProblem } from '../../kernel/src/isolation/load.ts'
import type { PluginCall } from '../../kernel/src/plugins/runtime.ts'

describe('frames', () => {
  it('come out whole however the stream cuts them', () => {
    const bytes = Buffer.concat([
      encodeFrame({ t: 'pong', n: 1 }),
      encodeFrame({ t: 'pong', n: 2, text: 'é'.repeat(50) }),
    ])
    for (const size of [1, 3, 7, bytes.length]) {
      const reader = new FrameReader(1024)
      const out: string[] = []
      for (let at = 0; at < bytes.length; at += size) out.push(...reader.push(bytes.subarray(at, at + size)))
      expect(out.map((text) => JSON.parse(text).n)).toEqual([1, 2])
    }
  })

  it('announced over the limit are refused before they are read', () => {
    const reader = new FrameReader(1024)
    const head = Buffer.alloc(4)
    head.writeUInt32BE(0xffffffff)
    expect(() => reader.push(head)).toThrow(/4294967295 bytes is over the limit of 1024/)
  })
})

describe('messages from a plugin’s process', () => {
  it('pass only in the shape their schema gives', () => {
    expect(childMessageProblem({ t: 'pong', n: 3 })).toBeNull()
    expect(childMessageProblem({ t: 'response', id: 1, status: 200, headers: {}, body: { any: 'json' } })).toBeNull()
    expect(childMessageProblem({ t: 'call', id: 1, method: 'settings.get', args: ['theme'] })).toBeNull()
    expect(childMessageProblem([1])).toMatch(/not an object/)
    expect(childMessageProblem({ t: 'become-admin' })).toMatch(/unknown kind/)
    expect(childMessageProblem({ t: 'pong', n: 3, extra: true })).toMatch(/malformed pong/)
    expect(childMessageProblem({ t: 'response', id: 1, status: 101, headers: {} })).toMatch(/malformed response/)
    // Only the calls an isolated plugin has: its settings and its audit records.
    expect(childMessageProblem({ t: 'call', id: 1, method: 'database.query', args: ['select 1'] })).toMatch(
      /malformed call/,
    )
    expect(
      childMessageProblem({ t: 'call', id: 1, method: 'audit.record', args: [{ action: 'x', detail: {} }, null] }),
    ).toBeNull()
    expect(childMessageProblem({ t: 'call', id: 1, method: 'audit.record', args: [{ action: '../x' }, null] })).toMatch(
      /malformed call/,
    )
  })
})

describe('what an isolated plugin may serve in this version', () => {
  it('routes with a role, a JSON body and schemas the kernel can run safely', () => {
    const route = (options: Record<string, unknown>) => ({
      routes: [{ method: 'GET' as const, path: '/api/p/x', options: { role: 'viewer', ...options } }],
      sockets: [],
    })
    expect(manifestProblem(route({}))).toBeNull()
    expect(manifestProblem(route({ role: undefined }))).toMatch(/declares no valid role/)
    expect(manifestProblem(route({ rawBody: true }))).toMatch(/rawBody .* isolated plugins cannot have yet/)
    expect(manifestProblem(route({ bodyLimit: 64 * 1024 * 1024 }))).toMatch(/body limit over 8 MiB/)
    const query = (pattern: string) => ({
      querystring: { type: 'object', properties: { q: { type: 'string', pattern } } },
    })
    expect(manifestProblem(route({ schema: query('^[a-z0-9-]{1,40}$') }))).toBeNull()
    expect(manifestProblem(route({ schema: query('^(a+)+$') }))).toMatch(/exponential time/)
    expect(
      manifestProblem({ routes: [], sockets: [{ path: '/api/p/ws', options: { role: 'public', admit: false } }] }),
    ).toMatch(/socket \/api\/p\/ws declares no valid role/)
  })

  it('schemas nested past the limit are refused', () => {
    let deep: Record<string, unknown> = { type: 'string' }
    for (let i = 0; i < 40; i++) deep = { type: 'array', items: deep }
    expect(schemaProblem(deep)).toMatch(/nested deeper/)
  })
})

describe('where an error came from', () => {
  it('is the first frame inside the plugin’s folder, relative to it', () => {
    const stack = [
      'Error: boom',
      '    at run (file:///hostd/sdk/src/isolated/runner.ts:10:3)',
      '    at start (file:///plugin/src/index.ts?x=1:17:13)',
      '    at file:///plugin/src/other.ts:2:1',
    ].join('\n')
    expect(originOf(stack)).toBe('src/index.ts:17:13')
    expect(originOf('Error: boom\n    at node:internal/x:1:1')).toBeUndefined()
  })
})

describe('where the sandbox cannot start', () => {
  const isolation = (trusted: string[]) => {
    const it = new PluginIsolation({
      settings: DEFAULT_ISOLATION,
      dataDir: '/nonexistent',
      log: pino({ level: 'silent' }),
      probe: async () => 'user namespaces are refused here',
    })
    it.trusted = (id) => trusted.includes(id)
    return it
  }

  // No process is started here, so no deadline is needed: the call runs as it is.
  const direct: PluginCall = async (_what, fn) => fn()

  it('a third-party plugin does not run, with the reason', async () => {
    const refused = isolation([])
    expect(await refused.unavailableReason()).toBe('user namespaces are refused here')
    await expect(refused.load('/plugins/acme', '/plugins/acme/src/index.ts', direct)).rejects.toThrow(
      /run in a sandbox, which cannot start here: user namespaces are refused here\. An admin may mark this plugin trusted/,
    )
  })

  it('unless an admin marked it trusted: then it is imported in the daemon’s process (null)', async () => {
    expect(await isolation(['acme']).load('/plugins/acme', '/plugins/acme/src/index.ts', direct)).toBeNull()
    expect(await isolation(['acme']).modeFor('acme')).toBe('in-process')
    expect(await isolation([]).modeFor('acme')).toBe('isolated')
  })
})
