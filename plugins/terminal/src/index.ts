/**
 * The terminal plugin: `/api/terminal`, an admin WebSocket carrying an interactive login shell on the host (node-pty),
 * as the unix account HOSTD_TERMINAL_USER. Protocol, settings and security notes: README.md.
 */
import { definePlugin, tokens, type AuditService, type Logger, type SocketContext, type Static } from '@hostd/sdk'
import type { WebSocket } from 'ws'
import { configFromEnv, planLaunch, shellEnvironment, type TerminalConfig } from './config.ts'
import { TerminalErrors } from './errors.ts'
import { TerminalQuery } from './schemas.ts'
import { refuse, TerminalSession } from './session.ts'

const DEFAULT_SIZE = { cols: 80, rows: 24 }

/** What one load of the plugin keeps: its terminals, counted per user, and those still ending. */
interface TerminalLoad {
  /** Open terminals per hostd user id. */
  openPerUser: Map<string, number>
  /** Sessions whose processes are still being ended; `stop` waits for them. */
  ending: Set<Promise<void>>
}

/** `overrides` replace settings read from the environment (tests). */
export function terminalPlugin(overrides: Partial<TerminalConfig> = {}) {
  // Read once, when first needed (a bad setting then fails the load): the condition needs it too, outside a load.
  let config: TerminalConfig | null = null
  const current = (): TerminalConfig => (config ??= { ...configFromEnv(), ...overrides })

  async function open(
    socket: WebSocket,
    ctx: SocketContext<Static<typeof TerminalQuery>>,
    { audit, log }: { audit: AuditService; log: Logger },
    { openPerUser, ending }: TerminalLoad,
  ): Promise<void> {
    const { maxSessions, idleSeconds } = current()
    const actor = { user: ctx.user, ip: ctx.request.ip }
    const record = (event: Parameters<AuditService['record']>[0]) =>
      audit.record(event, actor).catch((err: unknown) => log.error({ err }, 'terminal audit write failed'))
    // Counted before anything is awaited, so two sockets opened at once cannot both take the last place.
    const count = openPerUser.get(ctx.user.id) ?? 0
    if (count >= maxSessions) {
      const err = TerminalErrors.tooManySessions(
        `You already have ${count} terminals open, the most allowed (HOSTD_TERMINAL_MAX_SESSIONS=${maxSessions}): close one first`,
      )
      refuse(socket, err)
      await record({ action: 'terminal.open', result: 'failure', detail: { reason: err.message } })
      return
    }
    openPerUser.set(ctx.user.id, count + 1)
    let released = false
    const release = () => {
      if (released) return
      released = true
      const left = (openPerUser.get(ctx.user.id) ?? 1) - 1
      if (left > 0) openPerUser.set(ctx.user.id, left)
      else openPerUser.delete(ctx.user.id)
    }

    const plan = await planLaunch(current())
    if (socket.readyState !== socket.OPEN || ctx.signal.aborted) return release()
    if (typeof plan === 'string') {
      release()
      refuse(socket, TerminalErrors.unavailable(plan))
      await record({ action: 'terminal.open', result: 'failure', detail: { reason: plan } })
      return
    }
    const account = plan.account.name
    const cols = ctx.query.cols ?? DEFAULT_SIZE.cols
    const rows = ctx.query.rows ?? DEFAULT_SIZE.rows
    let opened: Promise<unknown> = Promise.resolve()
    const session: TerminalSession = new TerminalSession({
      socket,
      launch: plan,
      env: shellEnvironment(plan.account),
      cols,
      rows,
      idleMs: idleSeconds * 1000,
      signal: ctx.signal,
      onEnd: (end) => {
        release()
        const done = session.ended.finally(() => ending.delete(done))
        ending.add(done)
        void opened.then(() =>
          record({ action: 'terminal.close', target: account, detail: { account, pid: session.pid, ...end } }),
        )
      },
    })
    try {
      session.start()
    } catch (e) {
      release()
      const err = TerminalErrors.spawnFailed(`The shell could not be started: ${(e as Error).message}`)
      refuse(socket, err)
      await record({
        action: 'terminal.open',
        target: account,
        result: 'failure',
        detail: { account, reason: err.message },
      })
      return
    }
    opened = record({
      action: 'terminal.open',
      target: account,
      detail: { account, shell: plan.account.shell, pid: session.pid, cols, rows },
    })
  }

  return definePlugin({
    id: 'terminal',
    version: '1.0.0',
    kernel: '^1.1.0',
    description: 'An interactive shell on the host over an admin WebSocket, as a configured unix account.',
    ui: {
      pages: [
        {
          path: '/terminal',
          title: 'Terminal',
          icon: 'terminal',
          role: 'admin',
          module: 'ui/terminal.tsx',
          element: 'terminal-page',
        },
      ],
    },
    deps: { audit: tokens.audit, log: tokens.logger },
    // Unavailable (with the reason) when no account is configured on a root daemon, the account cannot log in, or the
    // daemon cannot become it; rechecked by the kernel, so fixing the account brings the terminal back.
    conditions: [
      {
        name: 'terminal-account',
        check: async () => {
          const plan = await planLaunch(current())
          return typeof plan === 'string' ? plan : true
        },
      },
    ],
    setup: (): TerminalLoad => {
      current() // a bad setting fails the load with its message
      return { openPerUser: new Map(), ending: new Set() }
    },
    sockets: (s, deps, load) => {
      s.ws('/api/terminal', { role: 'admin', sessionOnly: true, query: TerminalQuery }, (socket, ctx) =>
        open(socket, ctx, deps, load),
      )
    },
    stop: async (_deps, { ending }) => {
      await Promise.all(ending)
    },
  })
}

export default terminalPlugin()
