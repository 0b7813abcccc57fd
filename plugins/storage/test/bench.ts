/**
 * Storage benchmark (`npm run bench`, or `node plugins/storage/test/bench.ts`): download throughput of a 1 GiB
 * file over TLS from a spawned hostd (GET /api/storage/fs/download) next to nginx serving the same file over TLS
 * on loopback with the same certificate, in the same run. Servers run in their own processes; the client is curl,
 * which reads and discards the bytes. Rounds alternate hostd and nginx; medians are compared (goal: ratio >= 0.7).
 * Prints a table and a final `BENCH_JSON {...}` line.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { chmod, mkdir, mkdtemp, open, rm, writeFile } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, startDaemon, type Daemon } from '../../../test/support/daemon.ts'

const FILE_BYTES = Number(process.env.BENCH_STORAGE_BYTES ?? 1024 ** 3)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const GOAL = 0.7
const USERNAME = 'bench'
const PASSWORD = 'correct horse battery'

async function makeFile(path: string): Promise<void> {
  const block = randomBytes(1024 * 1024)
  const handle = await open(path, 'w')
  try {
    for (let written = 0; written < FILE_BYTES; written += block.length) await handle.write(block, 0, Math.min(block.length, FILE_BYTES - written))
  } finally {
    await handle.close()
  }
}

/**
 * One GET over a fresh TLS connection by curl (OpenSSL, like nginx): a C client, so the numbers are the servers'
 * and not a JavaScript client's decryption speed. The body goes to /dev/null.
 */
function download(url: string, headers: Record<string, string> = {}): Promise<{ bytes: number; ms: number; status: number }> {
  const args = ['-k', '-s', '-o', '/dev/null', '-w', '%{http_code} %{size_download} %{time_total}']
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`)
  return new Promise((resolve, reject) => {
    execFile('curl', [...args, url], { timeout: 600_000 }, (err, stdout) => {
      const [status, bytes, seconds] = stdout.trim().split(' ').map(Number)
      if (err && !status) return reject(err)
      resolve({ status: status!, bytes: bytes!, ms: seconds! * 1000 })
    })
  })
}

async function startNginx(dir: string, root: string, cert: string, key: string): Promise<{ url: string; process: ChildProcess; stop(): Promise<void> }> {
  const port = await freePort()
  const prefix = join(dir, 'nginx')
  await mkdir(join(prefix, 'logs'), { recursive: true })
  const conf = join(prefix, 'nginx.conf')
  // One worker, like hostd's one event loop; sendfile cannot apply under TLS (no kTLS here), so both encrypt in user space.
  await writeFile(conf, `
worker_processes 1;
daemon off;
pid ${prefix}/nginx.pid;
error_log ${prefix}/logs/error.log warn;
events { worker_connections 64; }
http {
  access_log off;
  sendfile on;
  client_body_temp_path ${prefix}/client_body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
  types { application/octet-stream bin; }
  server {
    listen 127.0.0.1:${port} ssl;
    ssl_certificate ${cert};
    ssl_certificate_key ${key};
    ssl_protocols TLSv1.2 TLSv1.3;
    root ${root};
    location / { }
  }
}
`)
  const child = spawn('nginx', ['-p', prefix, '-c', conf, '-e', join(prefix, 'logs', 'error.log')], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += String(d)))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const url = `https://127.0.0.1:${port}`
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${stderr}`)
    if ((await download(`${url}/missing`).catch(() => ({ status: 0 }))).status === 404) break
    if (attempt > 100) throw new Error(`nginx did not start: ${stderr}`)
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    url, process: child,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM') // by PID: the master, which stops its worker
        await exited
      }
    },
  }
}

/** utime+stime in seconds of a process and its children that are still running (nginx: master and worker). */
async function cpuSeconds(pid: number): Promise<number> {
  const { readFile, readdir } = await import('node:fs/promises')
  const tick = 100 // USER_HZ on Linux
  let total = 0
  const pids = [pid]
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (Number(fields[1]) === pid) pids.push(Number(entry))
  }
  for (const p of pids) {
    const stat = await readFile(`/proc/${p}/stat`, 'utf8').catch(() => '')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    total += (Number(fields[11]) + Number(fields[12])) / tick
  }
  return total
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const mbps = (bytes: number, ms: number) => bytes / 1024 / 1024 / (ms / 1000)

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'hostd-storage-bench-'))
  const files = join(dir, 'files')
  await mkdir(files)
  await chmod(dir, 0o755) // nginx's worker (user nobody) must read the file
  let daemon: Daemon | undefined
  let nginx: Awaited<ReturnType<typeof startNginx>> | undefined
  try {
    await makeFile(join(files, 'big.bin'))
    daemon = await startDaemon({ env: { HOSTD_BUILTIN_PLUGINS: '1', HOSTD_FILE_ROOTS: `bench=${files}`, ...(process.env.BENCH_DAEMON_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_DAEMON_NODE_OPTIONS } : {}) } })
    const setup = await daemon.fetch('/api/setup', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: USERNAME, password: PASSWORD }) })
    if (setup.status !== 201) throw new Error(`setup answered ${setup.status}`)
    const login = await daemon.fetch('/api/auth/login', { method: 'POST', headers: { 'content-type': 'application/json', 'x-svc-client': '1' }, body: JSON.stringify({ username: USERNAME, password: PASSWORD }) })
    const token = ((await login.json()) as { token: string }).token
    nginx = await startNginx(dir, files, join(daemon.dataDir, 'tls', 'cert.pem'), join(daemon.dataDir, 'tls', 'key.pem'))

    const hostdUrl = `${daemon.url}/api/storage/fs/download?root=bench&path=big.bin`
    const auth = { authorization: `Bearer ${token}` }
    // Warm-up (page cache, JIT), and a check that both serve the whole file.
    for (const [url, headers] of [[hostdUrl, auth], [`${nginx.url}/big.bin`, {}]] as const) {
      const warm = await download(url, headers)
      if (warm.status !== 200 || warm.bytes !== FILE_BYTES) throw new Error(`${url} answered ${warm.status} with ${warm.bytes} bytes`)
    }
    const rows: { round: number; server: string; mbps: number; ms: number; cpu: number }[] = []
    const measure = async (round: number, server: string, pid: number, url: string, headers: Record<string, string>) => {
      const cpu0 = await cpuSeconds(pid)
      const r = await download(url, headers)
      rows.push({ round, server, mbps: mbps(r.bytes, r.ms), ms: r.ms, cpu: (await cpuSeconds(pid)) - cpu0 })
    }
    for (let round = 1; round <= ROUNDS; round++) {
      await measure(round, 'hostd', daemon.pid, hostdUrl, auth)
      await measure(round, 'nginx', nginx.process.pid!, `${nginx.url}/big.bin`, {})
    }
    const hostd = median(rows.filter((r) => r.server === 'hostd').map((r) => r.mbps))
    const ref = median(rows.filter((r) => r.server === 'nginx').map((r) => r.mbps))
    const ratio = hostd / ref
    console.log(`\nDownload of a ${(FILE_BYTES / 1024 ** 3).toFixed(2)} GiB file over TLS on loopback, one connection per download`)
    console.log('  round  server  MiB/s     seconds  server CPU s')
    for (const r of rows) console.log(`  ${String(r.round).padEnd(5)}  ${r.server.padEnd(6)}  ${r.mbps.toFixed(0).padStart(6)}  ${(r.ms / 1000).toFixed(2).padStart(8)}  ${r.cpu.toFixed(2).padStart(12)}`)
    // The machine may be shared: server CPU per GiB is the load-independent view of the same comparison.
    const cpuPerGiB = (server: string) => median(rows.filter((r) => r.server === server).map((r) => r.cpu)) / (FILE_BYTES / 1024 ** 3)
    console.log(`\n  median hostd: ${hostd.toFixed(0)} MiB/s   median nginx: ${ref.toFixed(0)} MiB/s   ratio ${ratio.toFixed(2)} (goal >= ${GOAL})`)
    console.log(`  server CPU per GiB: hostd ${cpuPerGiB('hostd').toFixed(2)} s, nginx ${cpuPerGiB('nginx').toFixed(2)} s`)
    console.log(`BENCH_JSON ${JSON.stringify({ bench: 'storage', fileBytes: FILE_BYTES, rounds: ROUNDS, hostdMiBps: Math.round(hostd), nginxMiBps: Math.round(ref),
      hostdCpuSecondsPerGiB: Number(cpuPerGiB('hostd').toFixed(2)), nginxCpuSecondsPerGiB: Number(cpuPerGiB('nginx').toFixed(2)), ratio: Number(ratio.toFixed(3)), goal: GOAL, met: ratio >= GOAL })}`)
  } finally {
    await nginx?.stop()
    await daemon?.stop()
    await rm(dir, { recursive: true, force: true })
  }
}

main().catch((err) => {
  console.error(`storage bench failed: ${(err as Error).stack ?? err}`)
  process.exit(1)
})
