/**
 * Real components for the containers tests: a private dockerd (own socket, data root, exec root, pidfile and
 * bridge, never --bridge=none), a test image imported from a busybox-static root filesystem, and a local
 * docker-registry on loopback. Everything lives under one temporary folder and is stopped by PID.
 * Recipes: shared/design/test-components.md.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm, symlink, writeFile, copyFile } from 'node:fs/promises'
import { createServer as createHttpServer, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort } from '@hostd/sdk/testing'
import { promisify } from 'node:util'

const run = promisify(execFile)

export interface TestEngine {
  dir: string
  socket: string
  /** unix://<socket>, for DOCKER_HOST. */
  host: string
  bridge: string
  subnet: string
  pid: number
  /** Calls the Engine API over the socket (for setup and independent checks). */
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: string; json(): any }>
  /** Runs the docker CLI against this engine. */
  docker(...args: string[]): Promise<string>
  stop(): Promise<void>
}

// The browser tests take freePort from here with the engine's helpers; it is the sdk's.
export { freePort }

export function unixRequest(
  socket: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: string; json(): any }> {
  return new Promise((resolve, reject) => {
    const payload =
      body === undefined ? undefined : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body)
    const req = request(
      {
        socketPath: socket,
        method,
        path,
        headers: payload ? { 'content-type': Buffer.isBuffer(body) ? 'application/x-tar' : 'application/json' } : {},
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          resolve({ status: res.statusCode ?? 0, body: text, json: () => JSON.parse(text) })
        })
      },
    )
    req.on('error', reject)
    req.end(payload)
  })
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** A folder for an engine that does not run yet; its socket will be `<dir>/docker.sock`. */
export async function engineDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'hostd-ctr-'))
}

/** Starts a private dockerd with a random bridge and subnet, so parallel test files never collide. */
export async function startEngine(existingDir?: string): Promise<TestEngine> {
  const tag = randomBytes(3).toString('hex')
  const bridge = `hctr${tag}`
  const subnetByte = 1 + (randomBytes(1)[0]! % 250)
  const subnet = `10.213.${subnetByte}.0/24`
  const dir = existingDir ?? (await engineDir())
  const socket = join(dir, 'docker.sock')
  for (const sub of ['data', 'exec']) await mkdir(join(dir, sub))
  await run('ip', ['link', 'add', bridge, 'type', 'bridge'])
  await run('ip', ['addr', 'add', `10.213.${subnetByte}.1/24`, 'dev', bridge])
  await run('ip', ['link', 'set', bridge, 'up'])
  const pidfile = join(dir, 'docker.pid')
  const child: ChildProcess = spawn(
    'dockerd',
    [
      '--host',
      `unix://${socket}`,
      '--data-root',
      join(dir, 'data'),
      '--exec-root',
      join(dir, 'exec'),
      '--pidfile',
      pidfile,
      `--bridge=${bridge}`,
      '--iptables=false',
      '--ip6tables=false',
      '--ip-masq=false',
      '--insecure-registry',
      '127.0.0.0/8',
      '--log-level',
      'warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], detached: false },
  )
  let stderr = ''
  child.stderr!.on('data', (c: Buffer) => {
    stderr = (stderr + c.toString()).slice(-4000)
  })
  const pid = child.pid!
  const api = (method: string, path: string, body?: unknown) => unixRequest(socket, method, path, body)
  const deadline = Date.now() + 30_000
  for (;;) {
    const ok = await api('GET', '/_ping').then(
      (r) => r.status === 200,
      () => false,
    )
    if (ok) break
    if (child.exitCode !== null || Date.now() > deadline) {
      await cleanup(dir, bridge, pid)
      throw new Error(`dockerd did not start: ${stderr}`)
    }
    await sleep(100)
  }
  const host = `unix://${socket}`
  const engine: TestEngine = {
    dir,
    socket,
    host,
    bridge,
    subnet,
    pid,
    api,
    docker: async (...args) => (await run('docker', ['-H', host, ...args], { maxBuffer: 16 * 1024 * 1024 })).stdout,
    stop: async () => {
      // Remove containers first: dockerd would otherwise wait out each one's stop timeout on shutdown.
      const list = await api('GET', '/containers/json?all=1').then(
        (r) => (r.status === 200 ? (r.json() as { Id: string }[]) : []),
        () => [],
      )
      await Promise.all(list.map((c) => api('DELETE', `/containers/${c.Id}?force=1&v=1`).catch(() => undefined)))
      // User-defined networks are bridges in the host's namespace (br-<id>) that outlive dockerd: remove them too.
      const networks = await api('GET', '/networks').then(
        (r) => (r.status === 200 ? (r.json() as { Id: string; Name: string }[]) : []),
        () => [],
      )
      const custom = networks.filter((n) => !['bridge', 'host', 'none'].includes(n.Name))
      await Promise.all(custom.map((n) => api('DELETE', `/networks/${n.Id}`).catch(() => undefined)))
      for (const n of custom) await run('ip', ['link', 'del', `br-${n.Id.slice(0, 12)}`]).catch(() => undefined)
      if (alive(pid)) {
        process.kill(pid, 'SIGTERM')
        for (let i = 0; i < 150 && alive(pid); i++) await sleep(100)
        if (alive(pid)) process.kill(pid, 'SIGKILL')
      }
      await cleanup(dir, bridge, pid)
    },
  }
  return engine
}

async function cleanup(dir: string, bridge: string, pid: number): Promise<void> {
  for (let i = 0; i < 50 && alive(pid); i++) await sleep(100)
  // Leftover mounts under the exec and data roots (netns, overlay) must go before the folder can.
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[1] ?? '')
    .filter((m) => m.startsWith(dir))
  for (const m of mounts.sort((a, b) => b.length - a.length)) await run('umount', ['-l', m]).catch(() => undefined)
  await run('ip', ['link', 'del', bridge]).catch(() => undefined)
  await rm(dir, { recursive: true, force: true }).catch(() => undefined)
}

/**
 * busybox-static needs nothing else; when the machine has Debian's dynamic `busybox` instead (the two packages
 * conflict, and another component may want the dynamic one), copy the loader and libraries it names.
 */
async function copyLibraries(binary: string, rootfs: string): Promise<void> {
  const { stdout } = await run('ldd', [binary]).catch(() => ({ stdout: '' }))
  for (const line of stdout.split('\n')) {
    const lib = /(\/[^\s]+)\s+\(0x/.exec(line)?.[1]
    if (!lib) continue
    const target = join(rootfs, lib)
    await mkdir(join(target, '..'), { recursive: true })
    await copyFile(lib, target)
  }
}

export const BUSYBOX_LINKS = [
  'sh',
  'sleep',
  'echo',
  'cat',
  'httpd',
  'ls',
  'env',
  'true',
  'false',
  'id',
  'wget',
  'ps',
  'mkdir',
  'hostname',
  'yes',
  'head',
  'seq',
]

/**
 * Imports a test image from busybox-static: /bin/busybox and links, `/www/index.html` holding `marker`
 * (served by `httpd -f -p 8080 -h /www`). Returns the reference.
 */
export async function importTestImage(
  engine: TestEngine,
  ref: string,
  marker = 'hello from hostd test image',
  cmd = '["/bin/sh"]',
  links = BUSYBOX_LINKS,
): Promise<string> {
  const rootfs = await mkdtemp(join(engine.dir, 'rootfs-'))
  await mkdir(join(rootfs, 'bin'))
  await mkdir(join(rootfs, 'www'))
  await mkdir(join(rootfs, 'tmp'))
  await copyFile('/bin/busybox', join(rootfs, 'bin', 'busybox'))
  await copyLibraries('/bin/busybox', rootfs)
  for (const link of links) await symlink('busybox', join(rootfs, 'bin', link))
  await writeFile(join(rootfs, 'www', 'index.html'), `${marker}\n`)
  await writeFile(join(rootfs, 'marker'), `${marker}\n`)
  const tar = spawn('tar', ['-C', rootfs, '-c', '.'], { stdio: ['ignore', 'pipe', 'inherit'] })
  const imp = spawn('docker', ['-H', engine.host, 'import', '-c', `CMD ${cmd}`, '-c', 'ENV PATH=/bin', '-', ref], {
    stdio: ['pipe', 'ignore', 'pipe'],
  })
  tar.stdout!.pipe(imp.stdin!)
  let err = ''
  imp.stderr!.on('data', (c: Buffer) => (err += c.toString()))
  const code = await new Promise<number | null>((resolve) => imp.on('close', resolve))
  await rm(rootfs, { recursive: true, force: true })
  if (code !== 0) throw new Error(`docker import failed: ${err}`)
  return ref
}

export interface TestRegistry {
  /** host:port, e.g. 127.0.0.1:5123 */
  address: string
  pid: number
  stop(): Promise<void>
}

/** A local docker-registry on loopback (no TLS needed for 127.0.0.1). */
export async function startRegistry(dir: string): Promise<TestRegistry> {
  const port = await freePort()
  const root = join(dir, `registry-${port}`)
  await mkdir(root, { recursive: true })
  const config = join(root, 'config.yml')
  await writeFile(
    config,
    'version: 0.1\nlog: {level: error}\n' +
      `storage: {filesystem: {rootdirectory: ${join(root, 'data')}}, delete: {enabled: true}}\n` +
      `http: {addr: 127.0.0.1:${port}}\n`,
  )
  const child = spawn('docker-registry', ['serve', config], { stdio: 'ignore' })
  const pid = child.pid!
  const address = `127.0.0.1:${port}`
  for (let i = 0; ; i++) {
    const ok = await fetch(`http://${address}/v2/`).then(
      (r) => r.status === 200,
      () => false,
    )
    if (ok) break
    if (i > 200 || child.exitCode !== null) throw new Error('docker-registry did not start')
    await sleep(50)
  }
  return {
    address,
    pid,
    stop: async () => {
      if (alive(pid)) process.kill(pid, 'SIGTERM')
      for (let i = 0; i < 50 && alive(pid); i++) await sleep(100)
      if (alive(pid)) process.kill(pid, 'SIGKILL')
    },
  }
}

/** Tags `local` as `<registry>/<repo>:<tag>`, pushes it. */
export async function pushToRegistry(engine: TestEngine, local: string, remote: string): Promise<void> {
  await engine.docker('tag', local, remote)
  await engine.docker('push', remote)
}

export interface EngineProxy {
  /** unix://<socket>, for DOCKER_HOST. */
  host: string
  stop(): Promise<void>
}

type ProxyHook = (method: string, path: string) => Promise<void>

/**
 * A unix-socket proxy in front of a test engine that runs `before(method, path)` and waits for it before it
 * forwards each request, and `after` once the engine answered, before the answer is passed on. It places another
 * local client's change (say, a volume created with host options) at an exact point between two of hostd's engine
 * calls, so a race window is tested every time, not by chance.
 */
export async function startEngineProxy(
  engine: TestEngine,
  before: ProxyHook,
  after: ProxyHook = async () => undefined,
): Promise<EngineProxy> {
  const socket = join(engine.dir, `proxy-${randomBytes(3).toString('hex')}.sock`)
  const server = createHttpServer((req, res) => {
    const method = req.method ?? 'GET'
    const path = req.url ?? '/'
    void before(method, path).then(
      () => {
        const upstream = request({ socketPath: engine.socket, method, path, headers: req.headers }, (answer) => {
          void after(method, path).then(
            () => {
              res.writeHead(answer.statusCode ?? 502, answer.headers)
              answer.pipe(res)
            },
            () => res.destroy(),
          )
        })
        upstream.on('error', () => res.destroy())
        req.pipe(upstream)
      },
      () => res.destroy(),
    )
  })
  await new Promise<void>((resolve) => server.listen(socket, resolve))
  return {
    host: `unix://${socket}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
