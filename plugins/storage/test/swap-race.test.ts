/**
 * The file browser under a real race, over real HTTP: a child process swaps a folder inside the root for a symlink
 * to a folder outside it (and back) as fast as it can, while lists, uploads, previews and downloads of that folder
 * run. Whatever the interleaving, nothing may be written outside the root (the child watches the outside folder
 * with inotify, so even a file created and removed again is seen), no outside entry or content may be answered,
 * no temporary upload file may be left anywhere, and no request may fail with a 5xx.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { storagePlugin } from '../src/index.ts'

/**
 * The racing local process: exchanges the folder and a symlink to the outside folder atomically
 * (renameat2 RENAME_EXCHANGE), so the name is always one or the other, in a loop until `stop` exists; meanwhile
 * it records every inotify event on the outside folder. Prints `{swaps, outsideEvents}` as JSON when it stops.
 */
const SWAPPER = String.raw`
import ctypes, json, os, struct, sys
root, outside, stop = sys.argv[1:4]
name, other = os.path.join(root, 'swap').encode(), os.path.join(root, '.swap-other').encode()
if not os.path.lexists(other):
    os.symlink(outside, other)
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK)
# IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE
if fd < 0 or libc.inotify_add_watch(fd, outside.encode(), 0x2 | 0x4 | 0x8 | 0x80 | 0x100 | 0x200) < 0:
    sys.exit('inotify failed')
events, swaps = [], 0
def drain():
    while True:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        i = 0
        while i < len(data):
            _, mask, _, size = struct.unpack_from('iIII', data, i)
            events.append([hex(mask), data[i + 16:i + 16 + size].rstrip(b'\0').decode('utf8', 'replace')])
            i += 16 + size
AT_FDCWD, RENAME_EXCHANGE = -100, 2
while not os.path.exists(stop):
    if libc.renameat2(AT_FDCWD, name, AT_FDCWD, other, RENAME_EXCHANGE) != 0:
        sys.exit('renameat2: ' + os.strerror(ctypes.get_errno()))
    swaps += 1
    if swaps % 64 == 0:
        drain()
drain()
print(json.dumps({'swaps': swaps, 'outsideEvents': events}))
`

describe('storage: a folder swapped for a symlink out of the root while requests run', () => {
  let t: TestKernel
  let base: string
  let root: string
  let outside: string
  let token: string
  let running: ChildProcess | null = null
  const secretName = `outside-secret-${process.pid}`
  const q = (params: Record<string, string>) => new URLSearchParams({ root: 'data', ...params }).toString()

  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'hostd-storage-race-'))
    root = join(base, 'root')
    outside = join(base, 'outside')
    await mkdir(join(root, 'swap'), { recursive: true })
    await mkdir(outside)
    await writeFile(join(root, 'swap', 'inner.txt'), 'INSIDE')
    await writeFile(join(outside, 'inner.txt'), 'OUTSIDE')
    await writeFile(join(outside, secretName), 'OUTSIDE SECRET')
    t = await startTestKernel({
      plugins: [storagePlugin({ roots: [{ name: 'data', path: root }] })],
      overNetwork: true,
    })
    token = (await t.login('admin')).token
  })
  afterAll(async () => {
    if (running && running.exitCode === null) {
      await writeFile(join(base, 'stop'), '')
      await new Promise((resolve) => running!.once('exit', resolve))
    }
    await t?.close()
    await rm(base, { recursive: true, force: true })
  })

  /**
   * Runs `rounds` rounds of `round` (four clients at a time, so requests overlap each other as well as the swaps)
   * while the swapper runs; returns what the swapper saw and every answer's status.
   */
  async function underSwaps(rounds: number, round: (i: number) => Promise<number[]>) {
    const stop = join(base, 'stop')
    await rm(stop, { force: true })
    const swapper = (running = spawn('python3', ['-c', SWAPPER, root, outside, stop], {
      stdio: ['ignore', 'pipe', 'inherit'],
    }))
    const output = new Promise<{ swaps: number; outsideEvents: [string, string][] }>((resolve, reject) => {
      let out = ''
      swapper.stdout!.on('data', (c: Buffer) => (out += c.toString()))
      swapper.once('exit', (code) =>
        code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`the swapper exited with ${code}`)),
      )
    })
    const statuses = new Map<number, number>()
    try {
      for (let i = 0; i < rounds; i += 4) {
        for (const answered of await Promise.all([0, 1, 2, 3].map((k) => round(i + k)))) {
          for (const status of answered) statuses.set(status, (statuses.get(status) ?? 0) + 1)
        }
      }
    } finally {
      await writeFile(stop, '')
    }
    return { ...(await output), statuses }
  }

  /** Refused, never failed (a swapped path is 403: it leads outside); and the race really ran, meeting both states. */
  function expectRaced(run: { swaps: number; statuses: Map<number, number> }) {
    const seen = JSON.stringify([...run.statuses])
    expect(
      [...run.statuses.keys()].filter((s) => s >= 500),
      seen,
    ).toEqual([])
    expect(run.swaps).toBeGreaterThan(100)
    expect(run.statuses.get(403) ?? 0, seen).toBeGreaterThan(0)
  }

  /** The folder's current name: the exchange leaves it at `swap` or at `.swap-other`. */
  const folder = async () =>
    (await lstat(join(root, 'swap'))).isDirectory() ? join(root, 'swap') : join(root, '.swap-other')

  it('never writes outside the root on upload, and leaves no temporary file behind', async () => {
    const uploaded = new Map<string, string>()
    const run = await underSwaps(600, async (i) => {
      const name = `up-${i}.txt`
      const content = `upload ${i}`
      const up = await t.inject({
        method: 'POST',
        url: `/api/storage/fs/upload?${q({ path: 'swap', name, ...(i % 4 === 0 ? { overwrite: '1' } : {}) })}`,
        as: { token },
        headers: { 'content-type': 'application/octet-stream' },
        payload: Buffer.from(content),
      })
      if (up.statusCode === 201) uploaded.set(name, content)
      return [up.statusCode]
    })
    expect(run.outsideEvents, 'something was written in the outside folder').toEqual([])
    expect((await readdir(outside)).sort()).toEqual(['inner.txt', secretName].sort())
    // Every upload answered 201 is in the folder with its content; nothing half-done is left anywhere.
    const dir = await folder()
    for (const [name, content] of uploaded) expect(await readFile(join(dir, name), 'utf8'), name).toBe(content)
    expect((await readdir(dir)).filter((n) => n.includes('.upload-'))).toEqual([])
    expect((await readdir(root)).filter((n) => n.includes('.upload-'))).toEqual([])
    expect(uploaded.size, JSON.stringify([...run.statuses])).toBeGreaterThan(0)
    expectRaced(run)
  }, 300_000)

  it('never lists, previews or downloads anything outside the root', async () => {
    const run = await underSwaps(600, async () => {
      const list = await t.inject({ url: `/api/storage/fs/list?${q({ path: 'swap' })}`, as: { token } })
      expect(list.body, 'an outside entry was listed').not.toContain(secretName)
      const read = await t.inject({ url: `/api/storage/fs/read?${q({ path: 'swap/inner.txt' })}`, as: { token } })
      expect(read.body, 'outside content was previewed').not.toContain('OUTSIDE')
      const download = await t.inject({
        url: `/api/storage/fs/download?${q({ path: 'swap/inner.txt' })}`,
        as: { token },
      })
      expect(download.body, 'outside content was downloaded').not.toContain('OUTSIDE')
      return [list.statusCode, read.statusCode, download.statusCode]
    })
    expect(run.statuses.get(200) ?? 0, JSON.stringify([...run.statuses])).toBeGreaterThan(0)
    expectRaced(run)
  }, 300_000)
})
