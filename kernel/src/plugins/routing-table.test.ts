import { describe, expect, it } from 'vitest'
import { RouteConflictError, RoutingTable } from './routing-table.ts'

describe('RoutingTable', () => {
  it('finds the owner of a path, ignoring the query string', () => {
    const t = new RoutingTable(
      [
        { method: 'GET', path: '/api/a/:id', target: 'a' },
        { method: 'POST', path: '/api/a/:id/stop', target: 'b' },
      ],
      String,
    )
    expect(t.find('GET', '/api/a/42?x=1')).toBe('a')
    expect(t.find('POST', '/api/a/42/stop')).toBe('b')
    expect(t.find('DELETE', '/api/a/42')).toBeUndefined()
  })

  it('refuses a route declared twice, also with other parameter names', () => {
    expect(
      () =>
        new RoutingTable(
          [
            { method: 'GET', path: '/api/a/:id', target: 'one' },
            { method: 'GET', path: '/api/a/:name', target: 'two' },
          ],
          (t) => `plugin ${t}`,
        ),
    ).toThrow(new RouteConflictError('GET /api/a/:name is served by plugin one already'))
  })
})
