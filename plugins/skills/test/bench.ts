/**
 * Skills benchmark (`npm run bench`, or `BENCH_ONLY=skills npm run bench`). In one process, against a real kernel
 * (sdk harness: real SQLite, real blob store on disk, requests through the same dispatcher the server uses):
 *   1. a large publish (PUT of a 16 MiB bundle in base64 JSON) in MiB/s, next to the floor it cannot beat:
 *      writing the same bytes with fsync + rename + folder fsync directly (reference, same run, same disk);
 *   2. small creates per second (SKILL.md + two small files, each a revision, one transaction);
 *   3. listing 300 skills: milliseconds per GET /api/skills;
 *   4. zip export of the 16 MiB bundle in MiB/s.
 * Prints a table and one final `BENCH_JSON {...}` line.
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, open, rename, rm, mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { startTestKernel } from '@hostd/sdk/testing'
import { createSkillsPlugin } from '../src/index.ts'

const MiB = 1024 * 1024
const md = (d: string) => `---\ndescription: ${JSON.stringify(d)}\ntags: [bench]\n---\n${'Step.\n'.repeat(300)}`
const b64 = (b: Buffer) => b.toString('base64')

async function durableWrite(dir: string, name: string, data: Buffer): Promise<void> {
  const tmp = join(dir, `${name}.tmp`)
  const h = await open(tmp, 'wx')
  await h.writeFile(data)
  await h.sync()
  await h.close()
  await rename(tmp, join(dir, name))
  const d = await open(dir, 'r')
  await d.sync()
  await d.close()
}

async function main(): Promise<void> {
  const scratch = await mkdtemp(join(tmpdir(), 'skills-bench-'))
  const t = await startTestKernel({ plugins: [createSkillsPlugin()], env: { HOSTD_DATA_DIR: join(scratch, 'data') } })
  try {
    const rounds = 3
    const files = () => Array.from({ length: 4 }, () => randomBytes(4 * MiB))
    const id = (await t.inject({ method: 'POST', url: '/api/skills', as: 'admin', payload: { name: 'big', body: md('big') } })).json().skill.id

    // 1. Large publish vs the durable-write floor.
    let publishMs = 0
    let rawMs = 0
    for (let r = 0; r < rounds; r++) {
      const data = files()
      const payload = JSON.stringify({ name: 'big', body: md(`big ${r}`), baseRevision: r + 1, files: data.map((d, i) => ({ path: `data/${i}.bin`, content: b64(d) })) })
      const t0 = performance.now()
      const res = await t.inject({ method: 'PUT', url: `/api/skills/${id}`, as: 'admin', headers: { 'content-type': 'application/json' }, payload })
      publishMs += performance.now() - t0
      if (res.statusCode !== 200) throw new Error(`publish failed: ${res.statusCode} ${res.body}`)
      const dir = join(scratch, `raw-${r}`)
      await mkdir(dir)
      const raw = files()
      const t1 = performance.now()
      for (let i = 0; i < raw.length; i++) await durableWrite(dir, String(i), raw[i]!)
      rawMs += performance.now() - t1
    }
    const publishMiBs = (16 * rounds) / (publishMs / 1000)
    const rawMiBs = (16 * rounds) / (rawMs / 1000)

    // 2. Small creates.
    const creates = 300
    const t2 = performance.now()
    for (let i = 0; i < creates; i++) {
      const res = await t.inject({ method: 'POST', url: '/api/skills', as: 'admin', payload: { name: `small ${i}`, body: md(`small ${i}`), files: [{ path: 'a.txt', content: b64(randomBytes(512)) }, { path: 'b/c.txt', content: b64(randomBytes(512)) }] } })
      if (res.statusCode !== 201) throw new Error(`create failed: ${res.statusCode}`)
    }
    const createsPerSec = creates / ((performance.now() - t2) / 1000)

    // 3. List.
    const lists = 50
    const t3 = performance.now()
    for (let i = 0; i < lists; i++) await t.inject({ url: '/api/skills?tag=bench', as: 'admin' })
    const listMs = (performance.now() - t3) / lists

    // 4. Export.
    const t4 = performance.now()
    const zip = await t.inject({ url: `/api/skills/${id}/export`, as: 'admin' })
    const exportMs = performance.now() - t4
    if (zip.statusCode !== 200) throw new Error('export failed')
    const exportMiBs = 16 / (exportMs / 1000)

    const rss = process.memoryUsage().rss / MiB
    const rows: [string, string][] = [
      ['publish 16 MiB bundle (PUT, base64 JSON)', `${publishMiBs.toFixed(1)} MiB/s`],
      ['durable write floor (fsync+rename, same bytes)', `${rawMiBs.toFixed(1)} MiB/s`],
      ['publish / floor ratio', (publishMiBs / rawMiBs).toFixed(2)],
      ['small creates (2 files each)', `${createsPerSec.toFixed(0)} /s`],
      [`list ${creates + 1} skills`, `${listMs.toFixed(2)} ms`],
      ['zip export of 16 MiB bundle', `${exportMiBs.toFixed(1)} MiB/s`],
      ['process RSS at end', `${rss.toFixed(0)} MiB`],
    ]
    const width = Math.max(...rows.map((r) => r[0].length))
    for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`)
    console.log(`BENCH_JSON ${JSON.stringify({
      publishMiBs: +publishMiBs.toFixed(1), floorMiBs: +rawMiBs.toFixed(1), publishFloorRatio: +(publishMiBs / rawMiBs).toFixed(2),
      createsPerSec: +createsPerSec.toFixed(0), listMs: +listMs.toFixed(2), listed: creates + 1, exportMiBs: +exportMiBs.toFixed(1), rssMiB: +rss.toFixed(0),
    })}`)
  } finally {
    await t.close()
    await rm(scratch, { recursive: true, force: true })
  }
}

await main()
