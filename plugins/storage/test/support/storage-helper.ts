import { spawn } from 'node:child_process'
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HELPER_PROGRAM, requestOverSocket, type HelperAnswer } from '../../../../helper/test/start-helper.ts'

/**
 * The real root helper (helper/hostd-helper.py) with the storage settings it reads from its environment
 * (HOSTD_HELPER_SMB_CONF, _SMB_SHARES, _EXPORT_ROOTS, _MOUNT_ROOT, _CREDENTIALS_DIR). helper/test/start-helper.ts
 * starts it with an empty environment, so the storage tests start it here.
 */
export interface StorageHelper {
  socket: string
  dir: string
  call(action: string, args?: Record<string, unknown>): Promise<HelperAnswer>
  log(): Promise<Record<string, any>[]>
  stop(): Promise<void>
}

export async function startStorageHelper(env: Record<string, string>, options: { dryRun?: boolean } = {}): Promise<StorageHelper> {
  const dir = await mkdtemp(join(tmpdir(), 'hostd-storage-helper-'))
  await chmod(dir, 0o755)
  const socket = join(dir, 'helper.sock')
  const logFile = join(dir, 'helper.log')
  const args = [HELPER_PROGRAM, '--socket', socket, '--log', logFile, '--uid', String(process.getuid!()), '--gid', String(process.getgid!())]
  if (options.dryRun) args.push('--dry-run')
  const child = spawn('/usr/bin/python3', args, { stdio: ['ignore', 'ignore', 'pipe'], env })
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += String(d)))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error(`helper exited: ${stderr}`)
    try {
      await requestOverSocket(socket, { action: 'ping' })
      break
    } catch {
      if (attempt > 200) {
        child.kill('SIGKILL')
        throw new Error(`helper did not answer: ${stderr}`)
      }
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  return {
    socket,
    dir,
    call: (action, a = {}) => requestOverSocket(socket, { action, args: a }),
    async log() {
      const text = await readFile(logFile, 'utf8').catch(() => '')
      return text.split('\n').filter(Boolean).map((line) => JSON.parse(line))
    },
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM')
        await exited
      }
      await rm(dir, { recursive: true, force: true })
    },
  }
}
