/**
 * The terminal over a real WebSocket to a listening test kernel, with real shells on real PTYs, run as the
 * unprivileged test account (the tests run as root, like the daemon here).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFile } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { promisify } from 'node:util'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { ensureTestAccount, type UnixAccount } from '../../../test/support/unix-user.ts'
import { terminalPlugin } from '../src/index.ts'
import { running, TerminalClient, until } from './support.ts'

const run = promisify(execFile)

describe('terminal socket', () => {
  let account: UnixAccount
  let t: TestKernel
  let admin: string
  const clients: TerminalClient[] = []
  const url = (query = '') => `${t.url!.replace(/^http/, 'ws')}/api/terminal${query}`
  const connect = (query = '', token = admin, headers: Record<string, string> = {}) => {
    const client = new TerminalClient(url(query), { token, headers })
    clients.push(client)
    return client
  }
  const shell = async (query = '') => {
    const client = connect(query)
    await client.waitForFrame('ready')
    return client
  }

  beforeAll(async () => {
    account = await ensureTestAccount()
    // A secret in the daemon's environment must never reach the shell.
    process.env.HOSTD_TERMINAL_TEST_CANARY = 'canary-4f2d9b'
    t = await startTestKernel({ plugins: [terminalPlugin({ user: account.name, maxSessions: 3 })], listen: true })
    admin = (await t.login('admin', 'term-admin')).token
  })
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()))
    await t?.close()
    delete process.env.HOSTD_TERMINAL_TEST_CANARY
  })

  it('runs a login shell as the configured account, in its home, with its own groups', async () => {
    const c = await shell()
    const ready = await c.waitForFrame('ready')
    expect(ready).toMatchObject({ type: 'ready', account: account.name, shell: account.shell, cols: 80, rows: 24 })
    expect(await c.run('echo $((6*7))')).toBe('42')
    expect(await c.run('id -un')).toBe(account.name)
    expect(await c.run('pwd')).toBe(account.home)
    // Its own supplementary groups (initgroups), not the root daemon's.
    const { stdout } = await run('id', ['-G', account.name])
    expect((await c.run('id -G')).split(' ').sort()).toEqual(stdout.trim().split(' ').sort())
    expect(await c.run('shopt -q login_shell && echo login')).toBe('login')
    await c.close()
  })

  it('keeps what the client sends from the moment the socket opens, before the shell exists, and runs it', async () => {
    const c = connect()
    await c.opened
    // Sent at once, before the ready frame (the plugin still looks the account up and starts the shell).
    c.type('echo early-$((6*7))\n')
    expect(c.frames.find((f) => f.type === 'ready')).toBeUndefined()
    await c.waitFor(/early-42\r\n/)
    await c.close()
  })

  it("gives the shell a clean environment: nothing of the daemon's but its locale name", async () => {
    const c = await shell()
    const env = Object.fromEntries(
      (await c.run('env'))
        .split('\n')
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    )
    expect(env).toMatchObject({
      TERM: 'xterm-256color',
      HOME: account.home,
      USER: account.name,
      LOGNAME: account.name,
      SHELL: account.shell,
    })
    expect(env.PATH).toMatch(/\/usr\/bin/)
    expect(env.LANG).toBeTruthy()
    expect(Object.keys(env).filter((k) => k.startsWith('HOSTD_'))).toEqual([])
    expect(JSON.stringify(env)).not.toContain('canary-4f2d9b')
    // Any variable the shell shares with the daemon's environment is one the plugin sets (or a login shell's own).
    const allowed = new Set([
      'TERM',
      'LANG',
      'HOME',
      'USER',
      'LOGNAME',
      'SHELL',
      'PATH',
      'PWD',
      'OLDPWD',
      'SHLVL',
      '_',
      'MAIL',
      'LS_COLORS',
    ])
    expect(Object.keys(env).filter((k) => k in process.env && !allowed.has(k))).toEqual([])
    await c.close()
  })

  it('resizes the PTY on a resize frame, and starts at the size in the query', async () => {
    const c = await shell('?cols=100&rows=30')
    expect(await c.run('stty size')).toBe('30 100')
    c.control({ type: 'resize', cols: 132, rows: 43 })
    expect(await c.run('stty size')).toBe('43 132')
    await c.close()
  })

  it('answers a bad text frame with an error frame and never writes a text frame to the PTY', async () => {
    const c = await shell()
    c.control('echo TEXT-FRAME-RAN\n')
    c.control({ type: 'resize', cols: 0, rows: 24 })
    c.control({ type: 'resize', cols: 80, rows: 24, extra: 1 })
    c.control({ type: 'paste', data: 'echo TEXT-FRAME-RAN' })
    c.control('{"type":"resize","cols":80,"cols":81,"rows":24}')
    await until(() => c.frames.filter((f) => f.type === 'error').length === 5)
    for (const f of c.frames.filter((f) => f.type === 'error')) expect(f.error).toBe('HOSTD_TERMINAL_BAD_FRAME')
    expect(await c.run('stty size')).toBe('24 80')
    expect(c.output).not.toContain('TEXT-FRAME-RAN')
    await c.close()
  })

  it('holds output while the client asked for a pause, and sends it on resume', async () => {
    const c = await shell()
    await c.run('true')
    c.control({ type: 'pause' })
    await new Promise((r) => setTimeout(r, 100)) // the pause frame is read before the command's output exists
    c.type('echo PAUSED-$((40+2))\n')
    await new Promise((r) => setTimeout(r, 500))
    expect(c.output).not.toMatch(/PAUSED-42/)
    c.control({ type: 'resume' })
    await c.waitFor(/PAUSED-42\r\n/)
    await c.close()
  })

  it("delivers the tail of a fast program's output when the shell exits, then an exit frame and close 1000", async () => {
    const c = await shell()
    await c.run('true')
    // The client stops reading for a while: the daemon's backlog passes the high watermark and the PTY is paused.
    c.ws.pause()
    c.type('seq 1 200000; exit 3\n')
    await new Promise((r) => setTimeout(r, 1000))
    c.ws.resume()
    expect(await c.closed).toEqual({ code: 1000, reason: 'shell exited' })
    expect(c.output).toMatch(/\r\n199999\r\n200000\r\n/)
    expect(c.frames.find((f) => f.type === 'exit')).toEqual({ type: 'exit', code: 3, signal: null })
  })

  it('takes a 200 KB paste whole into a raw-mode reader', async () => {
    const c = await shell()
    const paste = randomBytes(200_000)
    c.type(
      'f=$(mktemp); stty raw -echo -iexten; echo RAW-$((1+1)); head -c 200000 > "$f"; stty sane; echo SUM-$(sha256sum < "$f" | cut -c1-16); rm -f "$f"\n',
    )
    await c.waitFor(/RAW-2/)
    c.type(paste)
    const sum = (await c.waitFor(/SUM-([0-9a-f]{16})/))[1]
    expect(sum).toBe(createHash('sha256').update(paste).digest('hex').slice(0, 16))
    await c.close()
  })

  it('stops a flood with Ctrl-C, the daemon holding only a bounded backlog meanwhile', async () => {
    const c = new TerminalClient(url(), { token: admin, keep: 64 * 1024 })
    clients.push(c)
    await c.waitForFrame('ready')
    await c.run('true')
    c.type('yes flood-line-of-text\n')
    await until(() => c.bytes > 5_000_000)
    c.type('\x03')
    c.type('echo CTRLC-$((40+2))\n')
    await c.waitFor(/CTRLC-42\r\n/)
    await c.close()
  })

  it('ends the shell and its background jobs when the socket closes', async () => {
    const c = await shell()
    const shellPid = (await c.waitForFrame('ready')).pid as number
    // The shell reports the job ("[1] <pid>") before the echo: the pid is the last line.
    const jobPid = Number((await c.run('sleep 1000 & echo $!')).split('\n').at(-1))
    const orphanPid = Number((await c.run('nohup sleep 1001 >/dev/null 2>&1 & echo $!')).split('\n').at(-1))
    expect(await running(shellPid)).toBe(true)
    expect(await running(jobPid)).toBe(true)
    expect(await running(orphanPid)).toBe(true)
    await c.close()
    await until(async () => !(await running(shellPid)) && !(await running(jobPid)) && !(await running(orphanPid)))
  })

  it('refuses a session past the cap with an error frame and close 4429, and counts a closed one out', async () => {
    // The cap counts per hostd user: a user of its own, so other tests' sockets do not count.
    const token = (await t.login('admin', 'cap-admin')).token
    const mine = async () => {
      const c = connect('', token)
      await c.waitForFrame('ready')
      return c
    }
    const open = [await mine(), await mine(), await mine()]
    const fourth = connect('', token)
    expect(await fourth.closed).toEqual({ code: 4429, reason: 'HOSTD_TERMINAL_TOO_MANY_SESSIONS' })
    expect(fourth.frames[0]).toMatchObject({ type: 'error', error: 'HOSTD_TERMINAL_TOO_MANY_SESSIONS' })
    expect(fourth.frames[0].message).toMatch(/3 terminals open/)
    open[0]!.close()
    await open[0]!.closed
    const again = await mine()
    expect(await again.run('echo $((1+1))')).toBe('2')
    for (const c of [...open, again]) c.close()
    await Promise.all([...open, again].map((c) => c.closed))
  })

  it('answers 401 signed out and 403 to operators and viewers, before the upgrade', async () => {
    expect(await connect('', 'not-a-token').closed).toEqual({ code: 401, reason: 'refused before the upgrade' })
    for (const role of ['operator', 'viewer'] as const) {
      const token = (await t.login(role)).token
      expect((await connect('', token).closed).code).toBe(403)
    }
  })

  it('refuses a socket opened from another origin', async () => {
    const c = connect('', admin, { origin: 'https://evil.example' })
    expect((await c.closed).code).toBe(403)
  })

  it('refuses a bad size in the query before the upgrade', async () => {
    expect((await connect('?cols=0').closed).code).toBe(400)
    expect((await connect('?rows=100000').closed).code).toBe(400)
  })

  it('writes terminal.open and terminal.close to the audit log, never what was typed', async () => {
    const c = await shell()
    const pid = (await c.waitForFrame('ready')).pid
    await c.run('echo audit-secret-$((2+2))')
    await c.close()
    await c.closed
    let items: any[] = []
    await until(async () => {
      items = (await t.inject({ url: '/api/audit?range=all&limit=1000', as: 'admin' })).json().items
      return items.some((e) => e.action === 'terminal.close' && e.detail?.pid === pid)
    })
    const opened = items.find((e) => e.action === 'terminal.open' && e.detail?.pid === pid)
    const closed = items.find((e) => e.action === 'terminal.close' && e.detail?.pid === pid)
    expect(opened).toMatchObject({
      username: 'term-admin',
      ip: '127.0.0.1',
      target: account.name,
      result: 'success',
      detail: { account: account.name },
    })
    expect(closed).toMatchObject({
      username: 'term-admin',
      target: account.name,
      detail: { account: account.name, ended: 'closed', closeCode: 1005 },
    })
    expect(typeof closed.detail.seconds).toBe('number')
    expect(JSON.stringify(items)).not.toContain('audit-secret')
  })
})

describe('terminal settings and endings', () => {
  const kernels: TestKernel[] = []
  afterAll(async () => {
    for (const t of kernels) await t.close()
  })
  const start = async (options: Parameters<typeof terminalPlugin>[0]) => {
    const t = await startTestKernel({ plugins: [terminalPlugin(options)], listen: true })
    kernels.push(t)
    const token = (await t.login('admin')).token
    return {
      t,
      token,
      open: (query = '') => new TerminalClient(`${t.url!.replace(/^http/, 'ws')}/api/terminal${query}`, { token }),
    }
  }

  it('is unavailable on a root daemon without HOSTD_TERMINAL_USER, saying what to set, and answers 503 before the upgrade', async () => {
    expect(process.getuid!()).toBe(0) // the tests run as root, like the daemon here
    const { t, open } = await start({ user: null })
    const entry = (await t.inject({ url: '/api/extensions', as: 'admin' })).json().find((p: any) => p.id === 'terminal')
    expect(entry).toMatchObject({ state: 'unavailable' })
    expect(entry.reason).toMatch(/runs as root and HOSTD_TERMINAL_USER is not set/)
    const c = open()
    expect(await c.closed).toMatchObject({ code: 503 })
  })

  it('is unavailable when the account does not exist or cannot log in', async () => {
    const missing = await start({ user: 'hostd-no-such-user' })
    const reasonOf = async (t: TestKernel) =>
      (await t.inject({ url: '/api/extensions', as: 'admin' })).json().find((p: any) => p.id === 'terminal').reason
    expect(await reasonOf(missing.t)).toMatch(/"hostd-no-such-user", which is not a unix account/)
    const nologin = await start({ user: 'nobody' })
    expect(await reasonOf(nologin.t)).toMatch(/nobody has no login shell/)
  })

  it('runs a root shell only when HOSTD_TERMINAL_USER=root says so', async () => {
    const { open } = await start({ user: 'root' })
    const c = open()
    await c.waitForFrame('ready')
    expect(await c.run('id -u')).toBe('0')
    await c.close()
  })

  it('closes an idle terminal with an error frame and close 4408, and ends its shell', async () => {
    const { open } = await start({ user: (await ensureTestAccount()).name, idleSeconds: 1 })
    const c = open()
    const { pid } = await c.waitForFrame('ready')
    expect(await c.closed).toEqual({ code: 4408, reason: 'HOSTD_TERMINAL_IDLE' })
    expect(c.frames.find((f) => f.type === 'error')).toMatchObject({
      error: 'HOSTD_TERMINAL_IDLE',
      message: 'No input and no output for 1 s: the terminal was closed',
    })
    await until(async () => !(await running(pid)))
  })

  it("ends the shell when the socket's context aborts (the plugin is disabled), and audits how it ended", async () => {
    const { t, open } = await start({ user: (await ensureTestAccount()).name })
    const c = open()
    const { pid } = await c.waitForFrame('ready')
    const jobPid = Number((await c.run('sleep 1002 & echo $!')).split('\n').at(-1))
    await t.kernel.registry.disable('terminal')
    expect((await c.closed).code).toBe(1012)
    await until(async () => !(await running(pid)) && !(await running(jobPid)))
    const items = (await t.inject({ url: '/api/audit?range=all&limit=100', as: 'admin' })).json().items
    expect(items.find((e: any) => e.action === 'terminal.close')).toMatchObject({ detail: { ended: 'aborted', pid } })
  })
})
