import { definePlugin, Type, tokens } from '@hostd/sdk'

export const HelloSchema = Type.Object({ message: Type.String() })
const EchoQuery = Type.Object({ prefix: Type.Optional(Type.String({ maxLength: 32 })) })

export default definePlugin({
  id: 'hello',
  version: '1.0.0',
  kernel: '^1.1.0',
  description: 'Says hello to whoever is signed in.',
  deps: { log: tokens.logger },
  ui: { pages: [{ path: '/hello', title: 'Hello', icon: 'hand', module: 'ui/page.js', element: 'hello-page' }] },
  routes: (r) => {
    r.get('/api/hello', { role: 'viewer', schema: { response: { 200: HelloSchema } } }, (req) => ({
      message: `Hello, ${req.user!.username}!`,
    }))
  },
  sockets: (s, { log }) => {
    s.ws('/api/hello/echo', { role: 'viewer', query: EchoQuery }, (socket, { query, user }) => {
      log.debug({ user: user.username }, 'echo socket opened')
      socket.on('message', (data: Buffer) => socket.send(`${query.prefix ?? ''}${String(data)}`))
    })
  },
})
