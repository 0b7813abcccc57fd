/**
 * Skills benchmark (`npm run bench`, or `BENCH_ONLY=skills npm run bench`). Against a real spawned daemon over TLS;
 * every client is its own process (curl, wrk):
 *   1. publish of a 16 MiB bundle (PUT /api/skills/:id, four 4 MiB files in base64 JSON, 21 MiB on the wire), next to
 *      - the minimal JSON publish: the same request to a bare Fastify server (plain JavaScript) that parses it
 *        once, decodes the files and writes each durably (test/bench/bare-server.mjs, PUT /publish), and
 *      - the durable-write floor: the same decoded bytes written by this process, each file to a temporary name,
 *        fsynced, renamed, its folder fsynced, side by side (no network, no parsing);
 *      in rounds that rotate which goes first; the figures are ratios of medians;
 *   2. small creates per second (SKILL.md and two small files, each a revision, one transaction), wrk;
 *   3. listing every skill (GET /api/skills?tag=bench), latency, wrk;
 *   4. zip export of the 16 MiB bundle in MiB/s, curl.
 * Prints its figures beside their goals and one final `BENCH_JSON {...}` line.
 */
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir, open, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { performance } from 'node:perf_hooks'
import { startDaemon, type Daemon } from '../../../test/support/daemon.ts'
import {
  cpuSeconds,
  figure,
  figureTable,
  median,
  MiB,
  printBenchJson,
  round,
  runBench,
  startBare,
  table,
  tempDir,
  track,
  wrk,
  type Figure,
} from '../../../test/bench/support.ts'

const ROUNDS = Number(process.env.BENCH_SKILLS_ROUNDS) || 5
const FILES = 4
const FILE_BYTES = 4 * MiB
const BUNDLE_MIB = (FILES * FILE_BYTES) / MiB
const GOAL = { op: '>=', target: 0.7 } as const
const USERNAME = 'bench'
const PASSWORD = 'correct horse battery'
const run = promisify(execFile)

const md = (d: string) => `---\ndescription: ${JSON.stringify(d)}\ntags: [bench]\n---\n${'Step.\n'.repeat(300)}`

/** One request by curl (its own process): status and curl's own total time (connect, TLS, upload, answer). */
async function curl(
  method: string,
  url: string,
  token: string | null,
  bodyFile?: string,
): Promise<{ status: number; ms: number; bytes: number }> {
  const args = ['-sk', '-X', method, '-o', '/dev/null', '-w', '%{http_code} %{time_total} %{size_download}']
  if (token) args.push('-H', `authorization: Bearer ${token}`)
  if (bodyFile) args.push('-H', 'content-type: application/json', '--data-binary', `@${bodyFile}`)
  const { stdout } = await run('curl', [...args, url], { timeout: 120_000 })
  const [status, seconds, bytes] = stdout.trim().split(' ').map(Number)
  return { status: status!, ms: seconds! * 1000, bytes: bytes! }
}

async function durableWrite(dir: string, data: Buffer): Promise<void> {
  await mkdir(dir, { recursive: true })
  const handle = await open(join(dir, 'blob.tmp'), 'wx')
  try {
    await handle.writeFile(data)
    await handle.sync()
  } finally {
    await handle.close()
  }
  await rename(join(dir, 'blob.tmp'), join(dir, 'blob'))
  const folder = await open(dir, 'r')
  await folder.sync()
  await folder.close()
}

async function json(d: Daemon, method: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await d.fetch(path, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as any }
}

async function main(): Promise<void> {
  const scratch = tempDir('hostd-skills-bench-')
  const daemon = await startDaemon({ env: { HOSTD_BUILTIN_PLUGINS: '1', HOSTD_LOG_LEVEL: 'warn' } })
  track(daemon.process)
  try {
    if ((await json(daemon, 'POST', '/api/setup', { username: USERNAME, password: PASSWORD })).status !== 201)
      throw new Error('setup failed')
    const token: string = (
      await json(
        daemon,
        'POST',
        '/api/auth/login',
        { username: USERNAME, password: PASSWORD },
        { 'x-svc-client': 'bench' },
      )
    ).body.token
    const auth = { authorization: `Bearer ${token}` }
    const bare = await startBare(
      join(daemon.dataDir, 'tls', 'cert.pem'),
      join(daemon.dataDir, 'tls', 'key.pem'),
      join(scratch, 'bare'),
    )
    const made = await json(daemon, 'POST', '/api/skills', { name: 'big', body: md('big') }, auth)
    if (made.status !== 201) throw new Error(`create answered ${made.status}`)
    const id: string = made.body.skill.id

    // 1. Publish, the minimal JSON publish and the durable-write floor, in rotating order.
    const times = { hostd: [] as number[], bare: [] as number[], floor: [] as number[] }
    /** Server CPU seconds per publish, from /proc: the view least affected by a shared machine. */
    const cpu = { hostd: [] as number[], bare: [] as number[] }
    const payloadFile = join(scratch, 'payload.json')
    const kinds = ['hostd', 'bare', 'floor'] as const
    for (let r = 0; r < ROUNDS; r++) {
      const files = Array.from({ length: FILES }, () => randomBytes(FILE_BYTES)) // new content each round: no blob is reused
      await writeFile(
        payloadFile,
        JSON.stringify({
          name: 'big',
          body: md(`big ${r}`),
          baseRevision: r + 1,
          files: files.map((d, i) => ({ path: `data/${i}.bin`, content: d.toString('base64') })),
        }),
      )
      for (let k = 0; k < kinds.length; k++) {
        const kind = kinds[(r + k) % kinds.length]!
        if (kind === 'floor') {
          const t0 = performance.now()
          await Promise.all(files.map((d, i) => durableWrite(join(scratch, 'floor', String(r), String(i)), d)))
          times.floor.push(performance.now() - t0)
        } else {
          const pid = kind === 'hostd' ? daemon.pid : bare.pid
          const cpu0 = cpuSeconds(pid)
          const res = await curl(
            'PUT',
            kind === 'hostd' ? `${daemon.url}/api/skills/${id}` : `${bare.origin}/publish`,
            kind === 'hostd' ? token : null,
            payloadFile,
          )
          cpu[kind].push(cpuSeconds(pid) - cpu0)
          if (res.status !== 200) throw new Error(`${kind} publish answered ${res.status}`)
          times[kind].push(res.ms)
        }
      }
    }
    const mibs = (ms: number[]) => BUNDLE_MIB / (median(ms) / 1000)
    console.log(
      `Publish of a ${BUNDLE_MIB} MiB bundle (${FILES} files in base64 JSON), ${ROUNDS} rounds, rotating order`,
    )
    console.log(
      table(
        (Object.keys(times) as (keyof typeof times)[]).map((k) => [
          k,
          round(median(times[k])),
          round(mibs(times[k])),
          times[k].map(Math.round).join(' '),
          k === 'floor' ? '-' : `${Math.round(median(cpu[k]) * 1000)}`,
        ]),
        ['', 'median ms', 'MiB/s', 'rounds ms', 'server CPU ms (median)'],
      ),
    )

    // 2. Small creates: unique names from a counter in wrk's Lua.
    const rest = JSON.stringify({
      body: md('small'),
      files: [
        { path: 'a.txt', content: randomBytes(512).toString('base64') },
        { path: 'b/c.txt', content: randomBytes(512).toString('base64') },
      ],
    }).slice(1)
    const creates = await wrk({
      url: daemon.url,
      connections: 1,
      durationS: 3,
      headers: { ...auth, 'content-type': 'application/json' },
      serverPid: daemon.pid,
      // Lua long strings ([==[ ]==]) take the JSON as it is, backslashes included.
      script:
        'local n = 0\nrequest = function() n = n + 1; ' +
        `return wrk.format("POST", "/api/skills", nil, [==[{"name":"small ]==] .. n .. [==[",]==] .. [==[${rest}]==]) end`,
    })
    if (creates.non2xx || creates.socketErrors)
      throw new Error(`small creates: ${creates.non2xx} non-2xx, ${creates.socketErrors} errors`)
    // 3. List them all.
    const list = await wrk({
      url: `${daemon.url}/api/skills?tag=bench`,
      connections: 1,
      durationS: 3,
      headers: auth,
      serverPid: daemon.pid,
    })
    // 4. Export the big one.
    const zip = await curl('GET', `${daemon.url}/api/skills/${id}/export`, token)
    if (zip.status !== 200) throw new Error(`export answered ${zip.status}`)

    const figures: Figure[] = [
      figure(
        'publish 16 MiB / durable-write floor',
        median(times.floor) / median(times.hostd),
        'x',
        GOAL,
        `${round(mibs(times.hostd))} vs ${round(mibs(times.floor))} MiB/s (the floor: the decoded bytes, fsync + rename + folder fsync, no network)`,
      ),
      figure(
        'publish 16 MiB / minimal JSON publish (bare Fastify)',
        median(times.bare) / median(times.hostd),
        'x',
        GOAL,
        `${round(mibs(times.hostd))} vs ${round(mibs(times.bare))} MiB/s, the same request over TLS`,
      ),
      figure(
        'minimal JSON publish / durable-write floor',
        median(times.floor) / median(times.bare),
        'x',
        undefined,
        'what base64 JSON over TLS leaves of the floor',
      ),
      figure(
        'publish server CPU, minimal JSON publish / hostd',
        median(cpu.bare) / median(cpu.hostd),
        'x',
        undefined,
        `${Math.round(median(cpu.hostd) * 1000)} vs ${Math.round(median(cpu.bare) * 1000)} ms per publish`,
      ),
      figure('small creates (2 files each)', creates.rps, '/s', undefined, `p50 ${round(creates.p50Ms, 2)} ms`),
      figure(`list ${creates.requests + 1} skills, p50`, list.p50Ms, 'ms'),
      figure('zip export of the 16 MiB bundle', BUNDLE_MIB / (zip.ms / 1000), 'MiB/s'),
    ]
    console.log(`\n${figureTable(figures)}`)
    printBenchJson('skills', figures, { times, cpu, rounds: ROUNDS })
  } finally {
    await daemon.stop()
  }
}

await runBench('skills', main, 5 * 60_000)
