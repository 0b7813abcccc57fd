import { definePlugin, Type, tokens, type IconName } from '@hostd/sdk'

export const CountSchema = Type.Object({ count: Type.Integer(), by: Type.Union([Type.String(), Type.Null()]) })
const TickQuery = Type.Object({ every: Type.Optional(Type.Integer({ minimum: 50, maximum: 60_000 })) })

/** The state every hook of one load shares: made by `setup`, handed to the others as their last argument. */
class Counter {
  count = 0
  by: string | null = null
  bump(username: string) {
    this.count++
    this.by = username
    return { count: this.count, by: this.by }
  }
}

export default definePlugin({
  id: 'starter',
  version: '0.1.0',
  kernel: '^1.1.0',
  description: 'A starter plugin: a counter with a route, a live socket, a page and an overview card.',
  deps: { log: tokens.logger, audit: tokens.audit },
  setup: () => new Counter(),
  ui: {
    // `satisfies IconName`: the type check refuses an icon the UI kit does not have (docs/PLUGINS.md, "Icons").
    pages: [
      {
        path: '/starter',
        title: 'Starter',
        icon: 'activity' satisfies IconName,
        module: 'ui/page.js',
        element: 'starter-page',
      },
    ],
    cards: [{ title: 'Starter', module: 'ui/card.js', element: 'starter-card', size: 'small' }],
  },
  routes: (r, { audit }, counter) => {
    r.get('/api/starter', { role: 'viewer', schema: { response: { 200: CountSchema } } }, () => ({
      count: counter.count,
      by: counter.by,
    }))
    r.post('/api/starter/bump', { role: 'operator', schema: { response: { 200: CountSchema } } }, async (req) => {
      const answer = counter.bump(req.user!.username)
      await audit.record({ action: 'starter.bump', target: String(answer.count) }, req)
      return answer
    })
  },
  sockets: (s, { log }, counter) => {
    // Sends the count now and then every `every` ms; `signal` ends when the socket closes or the plugin unloads.
    s.ws('/api/starter/live', { role: 'viewer', query: TickQuery }, (socket, { query, signal }) => {
      log.debug('live socket opened')
      const send = () => socket.send(JSON.stringify({ count: counter.count, by: counter.by }))
      send()
      const timer = setInterval(send, query.every ?? 1000)
      signal.addEventListener('abort', () => clearInterval(timer))
    })
  },
})
