/**
 * A network namespace of its own for a test browser. Chromium fails the loads it has in flight (ERR_NETWORK_CHANGED)
 * whenever an address in its namespace comes or goes, and in a full run other tests add and remove interfaces all
 * the time (Docker bridges and veths, namespaces). In a namespace of its own Chromium sees one loopback that nothing
 * else changes. Pages still load from the very same URL, https://127.0.0.1:<daemon port>: a forwarder inside the
 * namespace listens on that port and joins each connection, through a Unix socket (a path, which reaches across
 * namespaces), to this process, which connects to the daemon:
 *
 *   namespace hostd-ui-<pid>-<id>                               |  the machine's namespace
 *   Chromium -> 127.0.0.1:<port> -> forwarder (netns-forwarder.ts) -> <tmp>/hostd-ui-<pid>-<id>/<port>.sock -> this process -> 127.0.0.1:<port>
 *
 * Needs root (`ip netns`), as the tests of containers and networks do. `close()` ends the forwarder by PID, deletes
 * the namespace and removes the socket folder; the first namespace a process makes first removes those a killed run
 * left (only those whose creating process is gone), and a process that exits removes its own.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises'
import { createConnection, createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const run = promisify(execFile)
const CHROMIUM = '/usr/bin/chromium'
const FORWARDER = fileURLToPath(new URL('./netns-forwarder.ts', import.meta.url))
/** hostd-ui-<pid of the process that made it>-<random id>: the name of a namespace and of its socket folder. */
const NAME = /^hostd-ui-(\d+)-[0-9a-f]+$/

export interface BrowserNetns {
  /** The namespace's name (`ip netns list`). */
  name: string
  /** An executable that runs Chromium in the namespace with the arguments it is given: playwright's `executablePath`. */
  executablePath: string
  /**
   * Makes 127.0.0.1:<port> in the namespace reach 127.0.0.1:<port> of the machine, so a page can open a server the
   * test started (a container's published port). Resolves once the port listens in the namespace; a second call for
   * the same port does nothing more.
   */
  forward(port: number): Promise<void>
  close(): Promise<void>
}

let staleRemoved: Promise<void> | null = null
/** What is still open, for the exit hook. */
const live = new Map<string, { dir: string; forwarder: ChildProcess | null }>()

function kill(pid: number | undefined, signal: NodeJS.Signals): void {
  try {
    if (pid) process.kill(pid, signal)
  } catch {
    /* already gone */
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Namespaces and socket folders of processes that are gone (a run killed before its `close()`). */
async function removeStale(): Promise<void> {
  const dead = (name: string) => {
    const match = NAME.exec(name)
    return match !== null && !alive(Number(match[1]))
  }
  for (const name of (await readdir('/run/netns').catch(() => [])).filter(dead))
    await run('ip', ['netns', 'del', name]).catch(() => undefined)
  for (const name of (await readdir(tmpdir()).catch(() => [])).filter(dead))
    await rm(join(tmpdir(), name), { recursive: true, force: true })
}

/** Whatever the exit, this process's namespaces go with it (the forwarders end by themselves when stdin closes). */
process.once('exit', () => {
  for (const [name, { dir, forwarder }] of live) {
    if (forwarder && forwarder.exitCode === null && forwarder.signalCode === null) kill(forwarder.pid, 'SIGKILL')
    try {
      execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' })
    } catch {
      /* already gone */
    }
    rmSync(dir, { recursive: true, force: true })
  }
})

/**
 * Pipes two sockets into each other. An end on one side ends the other once it has sent what it holds (a half-close
 * goes through as one); an error on one side destroys the other.
 */
function joinSockets(a: Socket, b: Socket, open: Set<Socket>): void {
  for (const [from, to] of [
    [a, b],
    [b, a],
  ] as const) {
    open.add(from)
    from.pipe(to)
    from.on('error', () => to.destroy())
    from.on('close', () => {
      open.delete(from)
      to.end()
    })
  }
}

/** A new namespace with its loopback up and its forwarder started; nothing forwarded yet. */
export async function startBrowserNetns(): Promise<BrowserNetns> {
  staleRemoved ??= removeStale()
  await staleRemoved
  const name = `hostd-ui-${process.pid}-${randomBytes(3).toString('hex')}`
  const dir = join(tmpdir(), name)
  await rm(dir, { recursive: true, force: true })
  await mkdir(dir, { mode: 0o700 })
  await run('ip', ['netns', 'add', name]).catch(async (err: Error) => {
    await rm(dir, { recursive: true, force: true })
    throw new Error(
      `the browser's network namespace could not be made (root is needed; HOSTD_TEST_BROWSER_NETNS=0 runs Chromium in the machine's): ${err.message}`,
    )
  })
  live.set(name, { dir, forwarder: null })
  const servers: Server[] = []
  const sockets = new Set<Socket>()
  let forwarder: ChildProcess | null = null
  let closed: Promise<void> | null = null
  const close = () =>
    (closed ??= (async () => {
      if (forwarder) {
        const child = forwarder
        const exited = new Promise<void>((resolve) =>
          child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve()),
        )
        if (child.exitCode === null && child.signalCode === null) kill(child.pid, 'SIGTERM')
        const killer = setTimeout(() => kill(child.pid, 'SIGKILL'), 3_000)
        await exited
        clearTimeout(killer)
      }
      for (const server of servers) server.close()
      for (const socket of sockets) socket.destroy()
      await run('ip', ['netns', 'del', name]).catch(() => undefined)
      await rm(dir, { recursive: true, force: true })
      live.delete(name)
    })())
  try {
    await run('ip', ['-n', name, 'link', 'set', 'lo', 'up'])
    const executablePath = join(dir, 'chromium')
    // `ip netns exec` execs Chromium in place (same PID, so playwright's kill reaches it) and keeps the pipe playwright
    // drives it through (a pipe, not a port: it does not care about namespaces).
    await writeFile(executablePath, `#!/bin/sh\nexec ip netns exec ${name} ${CHROMIUM} "$@"\n`, { mode: 0o755 })

    const child = spawn('ip', ['netns', 'exec', name, process.execPath, FORWARDER], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' },
    })
    forwarder = child
    live.set(name, { dir, forwarder: child })
    let stderr = ''
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    child.stdin!.on('error', () => undefined) // a forwarder that died is reported by the pending forward()
    const pending = new Map<string, { resolve(): void; reject(err: Error): void }>()
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    void gone.then(() => {
      // Pages can no longer reach any forwarded port: say why where the test's output shows it.
      if (!closed)
        process.stderr.write(
          `${new Date().toISOString()} the forwarder of ${name} exited (${child.exitCode ?? child.signalCode}): ${stderr.trim()}\n`,
        )
      for (const { reject } of pending.values()) reject(new Error(`the forwarder of ${name} exited: ${stderr.trim()}`))
      pending.clear()
    })
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const [verb, port = '', ...why] = line.split(' ')
      const waiter = pending.get(port)
      pending.delete(port)
      if (verb === 'ok') waiter?.resolve()
      else waiter?.reject(new Error(`forwarding port ${port} into ${name} failed: ${why.join(' ')}`))
    })

    const forwards = new Map<number, Promise<void>>()
    const forward = (port: number) => {
      let done = forwards.get(port)
      if (!done) {
        done = (async () => {
          if (closed) throw new Error(`${name} is closed`)
          const socketPath = join(dir, `${port}.sock`)
          const server = createServer({ allowHalfOpen: true }, (inner) =>
            joinSockets(
              inner,
              createConnection({ port, host: '127.0.0.1', noDelay: true, allowHalfOpen: true }),
              sockets,
            ),
          )
          servers.push(server)
          await new Promise<void>((resolve, reject) => {
            server.once('error', reject)
            server.listen(socketPath, () => resolve())
          })
          server.on('error', () => undefined) // listening: nothing left to report
          await new Promise<void>((resolve, reject) => {
            if (child.exitCode !== null || child.signalCode !== null)
              return reject(new Error(`the forwarder of ${name} exited: ${stderr.trim()}`))
            pending.set(String(port), { resolve, reject })
            child.stdin!.write(`forward ${port} ${socketPath}\n`)
          })
        })()
        forwards.set(port, done)
      }
      return done
    }
    return { name, executablePath, forward, close }
  } catch (err) {
    await close()
    throw err
  }
}
