/**
 * Storage benchmark (`npm run bench`, or `node plugins/storage/test/bench.ts`): downloads of a 1 GiB file over TLS
 * from a spawned hostd (GET /api/storage/fs/download) next to nginx serving the same file over TLS on loopback with
 * the same certificate, in the same run. Servers and clients each run in their own processes:
 *   1. whole-file downloads by curl (reads and discards the bytes), rounds alternating which server goes first;
 *   2. ranged downloads by wrk: 1 MiB `Range` requests at random 4 KiB-aligned offsets (what a video player or a
 *      resumed download does), 4 connections, pairs alternating which server goes first.
 * Medians are compared (goal: each ratio >= 0.7). Then a folder of 100 000 files (BENCH_STORAGE_FILES):
 *   3. the first page of its listing (GET /api/storage/fs/list, 200 entries) by curl, the first request and the median
 *      of 9 more (goal < 300 ms), the last page, `ls -1` (which sorts the names too) beside them, and the daemon's RSS
 *      growth from before the folder was first listed to 2 s after the ten first pages (goal < 20 MiB); the last page
 *      (which keeps every name before it) after that, shown beside.
 * Prints its figures and a final `BENCH_JSON {...}` line.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { performance } from 'node:perf_hooks'
import { chmod, mkdir, mkdtemp, open, rm, writeFile } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '@hostd/sdk/testing'
import { startDaemon, type Daemon } from '../../../test/support/daemon.ts'
import { figure, figureTable, memoryOf, printBenchJson, round, table, wrk } from '../../../test/bench/support.ts'

const FILE_BYTES = Number(process.env.BENCH_STORAGE_BYTES ?? 1024 ** 3)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const RANGE_PAIRS = 3
const RANGE_BYTES = 1024 * 1024
const GOAL = { op: '>=', target: 0.7 } as const
const FOLDER_FILES = Number(process.env.BENCH_STORAGE_FILES ?? 100_000)
const USERNAME = 'bench'
const PASSWORD = 'correct horse battery'

async function makeFile(path: string): Promise<void> {
  const block = randomBytes(1024 * 1024)
  const handle = await open(path, 'w')
  try {
    for (let written = 0; written < FILE_BYTES; written += block.length)
      await handle.write(block, 0, Math.min(block.length, FILE_BYTES - written))
  } finally {
    await handle.close()
  }
}

/**
 * One GET over a fresh TLS connection by curl (OpenSSL, like nginx): a C client, so the numbers are the servers'
 * and not a JavaScript client's decryption speed. The body goes to /dev/null.
 */
function download(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ bytes: number; ms: number; status: number }> {
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

async function startNginx(
  dir: string,
  root: string,
  cert: string,
  key: string,
): Promise<{ url: string; process: ChildProcess; stop(): Promise<void> }> {
  const port = await freePort()
  const prefix = join(dir, 'nginx')
  await mkdir(join(prefix, 'logs'), { recursive: true })
  const conf = join(prefix, 'nginx.conf')
  // One worker, like hostd's one event loop; sendfile cannot apply under TLS (no kTLS here), so both encrypt in user space.
  await writeFile(
    conf,
    `
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
`,
  )
  const child = spawn('nginx', ['-p', prefix, '-c', conf, '-e', join(prefix, 'logs', 'error.log')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
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
    url,
    process: child,
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

/** FOLDER_FILES empty files (and 100 folders) in `dir`, 500 at a time. */
async function makeFolder(dir: string): Promise<void> {
  await mkdir(dir)
  for (let i = 0; i < 100; i++) await mkdir(join(dir, `folder-${i}`))
  for (let from = 0; from < FOLDER_FILES; from += 500) {
    const batch = Array.from({ length: Math.min(500, FOLDER_FILES - from) }, (_, i) =>
      writeFile(join(dir, `file-${String(from + i).padStart(6, '0')}.txt`), ''),
    )
    await Promise.all(batch)
  }
}

/** Wall time of a command (ms), its output discarded. */
function timed(file: string, args: string[]): Promise<number> {
  const start = performance.now()
  return new Promise((resolve, reject) =>
    execFile(file, args, { maxBuffer: 64 * 1024 * 1024 }, (err) =>
      err ? reject(err) : resolve(performance.now() - start),
    ),
  )
}

/** Lists the first page, and others, of a folder of FOLDER_FILES files; the daemon's RSS before and after. */
async function bigFolder(daemon: Daemon, files: string, auth: Record<string, string>) {
  const path = 'many'
  await makeFolder(join(files, path))
  await new Promise((r) => setTimeout(r, 2000))
  const before = await memoryOf(daemon.pid)
  const page = async (offset: number) => {
    const r = await download(
      `${daemon.url}/api/storage/fs/list?root=bench&path=${path}&limit=200&offset=${offset}`,
      auth,
    )
    if (r.status !== 200 || r.bytes < 10_000) throw new Error(`list answered ${r.status} with ${r.bytes} bytes`)
    return r.ms
  }
  const first = await page(0)
  const again: number[] = []
  const cpu0 = await cpuSeconds(daemon.pid)
  for (let i = 0; i < 9; i++) again.push(await page(0))
  // Server CPU per first page: what the time would be on an idle core (this machine is shared).
  const cpuMs = (((await cpuSeconds(daemon.pid)) - cpu0) / 9) * 1000
  await new Promise((r) => setTimeout(r, 2000))
  const firstPages = await memoryOf(daemon.pid)
  // The last page keeps every name before it (offset + limit keys): the worst case, shown beside the goal's case.
  const last: number[] = []
  for (let i = 0; i < 3; i++) last.push(await page(FOLDER_FILES - 100))
  const ls: number[] = []
  for (let i = 0; i < 3; i++) ls.push(await timed('ls', ['-1', '--color=never', join(files, path)]))
  const after = await memoryOf(daemon.pid)
  await new Promise((r) => setTimeout(r, 2000))
  const idle = await memoryOf(daemon.pid)
  console.log(`
A folder of ${FOLDER_FILES} files and 100 folders: GET /api/storage/fs/list, 200 entries a page (curl)`)
  console.log(
    table(
      [
        ['first page, first request', round(first, 1)],
        ['first page, median of 9 more', round(median(again), 1)],
        ['last page, median of 3', round(median(last), 1)],
        ['reference: ls -1 (sorts the names), median of 3', round(median(ls), 1)],
      ],
      ['what', 'ms'],
    ),
  )
  console.log(
    `daemon RSS: ${before.rss} MiB before, ${firstPages.rss} after 10 first pages, ${after.rss} after 3 last pages, ` +
      `${idle.rss} 2 s later`,
  )
  console.log(`daemon CPU per first page: ${round(cpuMs, 1)} ms`)
  return { first, again, cpuMs, last, ls, rss: { before, firstPages, after, idle } }
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
    daemon = await startDaemon({
      env: {
        HOSTD_BUILTIN_PLUGINS: '1',
        HOSTD_FILE_ROOTS: `bench=${files}`,
        ...(process.env.BENCH_DAEMON_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_DAEMON_NODE_OPTIONS } : {}),
      },
    })
    const setup = await daemon.fetch('/api/setup', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: USERNAME, password: PASSWORD }),
    })
    if (setup.status !== 201) throw new Error(`setup answered ${setup.status}`)
    const login = await daemon.fetch('/api/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-svc-client': '1' },
      body: JSON.stringify({ username: USERNAME, password: PASSWORD }),
    })
    const token = ((await login.json()) as { token: string }).token
    nginx = await startNginx(
      dir,
      files,
      join(daemon.dataDir, 'tls', 'cert.pem'),
      join(daemon.dataDir, 'tls', 'key.pem'),
    )

    const hostdUrl = `${daemon.url}/api/storage/fs/download?root=bench&path=big.bin`
    const auth = { authorization: `Bearer ${token}` }
    // Warm-up (page cache, JIT), and a check that both serve the whole file.
    for (const [url, headers] of [
      [hostdUrl, auth],
      [`${nginx.url}/big.bin`, {}],
    ] as const) {
      const warm = await download(url, headers)
      if (warm.status !== 200 || warm.bytes !== FILE_BYTES)
        throw new Error(`${url} answered ${warm.status} with ${warm.bytes} bytes`)
    }
    const servers = {
      hostd: { url: hostdUrl, headers: auth as Record<string, string>, pid: daemon.pid },
      nginx: { url: `${nginx.url}/big.bin`, headers: {}, pid: nginx.process.pid! },
    }
    const order = (n: number) => (n % 2 ? (['hostd', 'nginx'] as const) : (['nginx', 'hostd'] as const))

    // 1. Whole file.
    const rows: { round: number; server: string; mbps: number; ms: number; cpu: number }[] = []
    for (let round = 1; round <= ROUNDS; round++) {
      for (const server of order(round)) {
        const { url, headers, pid } = servers[server]
        const cpu0 = await cpuSeconds(pid)
        const r = await download(url, headers)
        if (r.status !== 200 || r.bytes !== FILE_BYTES)
          throw new Error(`${server} answered ${r.status} with ${r.bytes} bytes`)
        rows.push({ round, server, mbps: mbps(r.bytes, r.ms), ms: r.ms, cpu: (await cpuSeconds(pid)) - cpu0 })
      }
    }
    console.log(
      `\nDownload of a ${(FILE_BYTES / 1024 ** 3).toFixed(2)} GiB file over TLS on loopback, one connection per download (curl)`,
    )
    console.log(
      table(
        rows.map((r) => [`${r.round} ${r.server}`, Math.round(r.mbps), round(r.ms / 1000, 2), round(r.cpu, 2)]),
        ['round', 'MiB/s', 'seconds', 'server CPU s'],
      ),
    )
    const whole = (server: string) => median(rows.filter((r) => r.server === server).map((r) => r.mbps))
    // The machine may be shared: server CPU per GiB is the load-independent view of the same comparison.
    const cpuPerGiB = (server: string) =>
      median(rows.filter((r) => r.server === server).map((r) => r.cpu)) / (FILE_BYTES / 1024 ** 3)

    // 2. Ranged: 1 MiB at random aligned offsets; the bytes read show each answer was the range, not the file.
    const blocks = Math.floor((FILE_BYTES - RANGE_BYTES) / 4096)
    const script = [
      'math.randomseed(42)',
      'request = function()',
      `  local from = math.random(0, ${blocks}) * 4096`,
      '  local headers = {}',
      '  for k, v in pairs(wrk.headers) do headers[k] = v end',
      `  headers["Range"] = "bytes=" .. from .. "-" .. (from + ${RANGE_BYTES - 1})`,
      '  return wrk.format("GET", nil, headers)',
      'end',
    ].join('\n')
    const ranged: { pair: number; server: string; rps: number; mbps: number; cpu: number }[] = []
    for (let pair = 1; pair <= RANGE_PAIRS; pair++) {
      for (const server of order(pair)) {
        const { url, headers, pid } = servers[server]
        const cpu0 = await cpuSeconds(pid)
        const r = await wrk({ url, connections: 4, durationS: 4, headers, script })
        const cpu = (await cpuSeconds(pid)) - cpu0
        if (r.non2xx || r.socketErrors)
          throw new Error(`${server} ranged: ${r.non2xx} non-2xx, ${r.socketErrors} socket errors`)
        // (+ the 4 answers still arriving when the run ends)
        if (r.bytes > (r.requests + 4) * (RANGE_BYTES + 4096))
          throw new Error(`${server} answered more than the ranges asked (${r.bytes} bytes for ${r.requests} requests)`)
        ranged.push({ pair, server, rps: r.rps, mbps: r.bytes / 1024 / 1024 / r.durationS, cpu: cpu / r.requests })
      }
    }
    console.log(`\nRanged downloads: 1 MiB at random offsets, wrk -t1 -c4 -d4s`)
    console.log(
      table(
        ranged.map((r) => [`${r.pair} ${r.server}`, Math.round(r.rps), Math.round(r.mbps), round(r.cpu * 1000, 2)]),
        ['pair', 'req/s', 'MiB/s', 'server CPU ms/req'],
      ),
    )
    const rangedRps = (server: string) => median(ranged.filter((r) => r.server === server).map((r) => r.rps))

    const figures = [
      figure(
        '1 GiB download, hostd / nginx',
        whole('hostd') / whole('nginx'),
        'x',
        GOAL,
        `${Math.round(whole('hostd'))} vs ${Math.round(whole('nginx'))} MiB/s; ` +
          `server CPU per GiB ${round(cpuPerGiB('hostd'), 2)} vs ${round(cpuPerGiB('nginx'), 2)} s`,
      ),
      figure(
        '1 MiB ranged downloads, hostd / nginx',
        rangedRps('hostd') / rangedRps('nginx'),
        'x',
        GOAL,
        `${Math.round(rangedRps('hostd'))} vs ${Math.round(rangedRps('nginx'))} req/s`,
      ),
    ]
    const folder = await bigFolder(daemon, files, auth)
    const growth = folder.rss.firstPages.rss - folder.rss.before.rss
    figures.push(
      figure(
        `folder of ${FOLDER_FILES / 1000}k files, first page listed`,
        Math.max(folder.first, median(folder.again)),
        'ms',
        { op: '<', target: 300 },
        `first request ${round(folder.first, 1)} ms, median of 9 more ${round(median(folder.again), 1)} ms ` +
          `(daemon CPU ${round(folder.cpuMs, 1)} ms each), last page ${round(median(folder.last), 1)} ms`,
      ),
      figure(
        `folder of ${FOLDER_FILES / 1000}k files, first page / ls -1`,
        median(folder.again) / median(folder.ls),
        'x',
        undefined,
        `${round(median(folder.again), 1)} vs ${round(median(folder.ls), 1)} ms (ls reads and sorts every name)`,
      ),
      figure(
        `folder of ${FOLDER_FILES / 1000}k files, daemon RSS growth`,
        growth,
        'MiB',
        { op: '<', target: 20 },
        `${folder.rss.before.rss} -> ${folder.rss.firstPages.rss} MiB after 10 first pages; ` +
          `${folder.rss.idle.rss} MiB after 3 last pages too`,
      ),
    )
    console.log(`\n${figureTable(figures)}`)
    printBenchJson('storage', figures, { fileBytes: FILE_BYTES, rounds: ROUNDS, whole: rows, ranged, folder })
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
