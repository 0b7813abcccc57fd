/**
 * Runs one widget script: `/bin/sh -c <script>` as the configured account, in its own process group, stdin closed,
 * a minimal environment, a private working folder, a timeout (SIGTERM to the group, SIGKILL 2 s later) and a
 * 64 KiB output cap (past it the group is killed and the output marked truncated). When the shell ends, whatever
 * it left running in its group is killed too: a widget script starts no daemons.
 */
import { spawn } from 'node:child_process'
import { chown, lstat, mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { Account } from './account.ts'
import { LIMITS, type Output } from './schemas.ts'

const KILL_GRACE_MS = 2000
/** After the shell exits, how long its pipes may stay open (held by a child that escaped the group) before we stop reading. */
const DRAIN_MS = 1000

/** Control characters go, except line feed and tab (carriage returns too: CRLF becomes LF). */
export function cleanText(bytes: Buffer): string {
  return bytes.toString('utf8').replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '')
}

/** The widget's private folder: `<work dir>/<id>`, mode 0700, owned by the account; never a link. */
export async function privateDir(workDir: string, id: string, account: Account): Promise<string> {
  const dir = join(workDir, id)
  await mkdir(dir, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err
  })
  const st = await lstat(dir)
  if (!st.isDirectory()) throw new Error(`${dir} is not a folder`)
  await chown(dir, account.uid, account.gid)
  return dir
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal)
  } catch {
    // The group is already gone.
  }
}

export interface RunRequest {
  script: string
  timeoutSeconds: number
  cwd: string
  account: Account
  /** Aborted when the plugin stops: the run is killed like a timeout. */
  signal?: AbortSignal
}

export function runScript(req: RunRequest): Promise<Output> {
  const started = Date.now()
  const ranAt = new Date(started).toISOString()
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', req.script], {
      cwd: req.cwd,
      uid: req.account.uid,
      gid: req.account.gid,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8', HOME: req.account.home },
    })
    const stdout: Buffer[] = []
    const stderr: Buffer[] = []
    let bytes = 0
    let truncated = false
    let timedOut = false
    let error: string | null = null
    let finished = false
    let killTimer: NodeJS.Timeout | null = null

    const stop = (why: 'timeout' | 'cap' | 'abort') => {
      if (why === 'timeout') timedOut = true
      if (why === 'cap') truncated = true
      if (why === 'abort') error = 'The run was stopped: the widgets plugin is stopping'
      if (child.pid === undefined || killTimer) return
      killGroup(child.pid, 'SIGTERM')
      killTimer = setTimeout(() => killGroup(child.pid!, 'SIGKILL'), KILL_GRACE_MS)
    }
    const collect = (into: Buffer[]) => (chunk: Buffer) => {
      if (truncated) return
      const room = LIMITS.outputBytes - bytes
      if (chunk.length > room) {
        into.push(chunk.subarray(0, room))
        bytes = LIMITS.outputBytes
        // Stop reading at once: the pipes are closed, so a writer gets EPIPE while the group is being killed.
        child.stdout?.destroy()
        child.stderr?.destroy()
        stop('cap')
        return
      }
      into.push(chunk)
      bytes += chunk.length
    }
    child.stdout!.on('data', collect(stdout))
    child.stderr!.on('data', collect(stderr))
    child.stdout!.on('error', () => undefined)
    child.stderr!.on('error', () => undefined)

    const timer = setTimeout(() => stop('timeout'), req.timeoutSeconds * 1000)
    const onAbort = () => stop('abort')
    req.signal?.addEventListener('abort', onAbort, { once: true })

    const finish = (exitCode: number | null) => {
      if (finished) return
      finished = true
      clearTimeout(timer)
      if (killTimer) clearTimeout(killTimer)
      req.signal?.removeEventListener('abort', onAbort)
      resolve({
        stdout: cleanText(Buffer.concat(stdout)),
        stderr: cleanText(Buffer.concat(stderr)),
        exitCode,
        ranAt,
        durationMs: Date.now() - started,
        truncated,
        timedOut,
        error,
      })
    }
    child.on('error', (err) => {
      error = `The script could not start: ${err.message}`
      finish(null)
    })
    child.on('exit', (code) => {
      // Whatever the shell left behind in its group goes with it.
      if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL')
      let drained = 0
      const done = () => {
        if (++drained === 2) finish(code)
      }
      const drain = setTimeout(() => {
        child.stdout?.destroy()
        child.stderr?.destroy()
        finish(code)
      }, DRAIN_MS)
      drain.unref()
      for (const stream of [child.stdout!, child.stderr!]) {
        if (stream.closed) done()
        else stream.once('close', done)
      }
    })
  })
}
