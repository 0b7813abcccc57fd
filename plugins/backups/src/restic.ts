/**
 * Running restic: always an argument vector (no shell), the repository and its secrets in the environment and in
 * owner-only files (RESTIC_PASSWORD_FILE, an SSH key file), never on the command line; `--json` lines parsed as
 * they come. restic's failures are classified into this plugin's stable error codes (errors.ts).
 */
import { spawn } from 'node:child_process'
import { BackupErrors } from './errors.ts'

export const RESTIC = process.env.HOSTD_BACKUPS_RESTIC || 'restic'

export interface ResticTarget {
  /** The repository as restic names it (`/path`, `sftp:host:/path`, `rest:http://...`). */
  repository: string
  /** Owner-only file holding the repository password. */
  passwordFile: string
  /** Extra `-o` options (the SFTP command). */
  options: string[]
  /** Extra environment (REST credentials go in the URL, which restic reads from RESTIC_REPOSITORY). */
  env: Record<string, string>
}

export interface ResticResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

export interface RunOptions {
  /** Called for each JSON line of stdout (status, summary...), in order. */
  onJson?: (message: Record<string, unknown>) => void
  /** Called once the process started. */
  onSpawn?: (pid: number) => void
  signal?: AbortSignal
  /** Keep stdout (default true); off for `backup --json`, whose status lines are only progress. */
  keepStdout?: boolean
  /** Milliseconds before the process is killed (default none). */
  timeoutMs?: number
}

const MAX_KEPT = 8 * 1024 * 1024

/** Runs `restic <args>` against `target`; resolves whatever the exit code (classify() turns failures into errors). */
export function runRestic(target: ResticTarget, args: string[], opts: RunOptions = {}): Promise<ResticResult> {
  const argv = [...target.options.flatMap((o) => ['-o', o]), ...args]
  return new Promise((resolve, reject) => {
    const child = spawn(RESTIC, argv, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? '/root',
        ...target.env,
        RESTIC_REPOSITORY: target.repository,
        RESTIC_PASSWORD_FILE: target.passwordFile,
        // Keep restic's own cache in its default place; no colour, no interactive prompts.
        RESTIC_PROGRESS_FPS: '2',
      },
      signal: opts.signal,
      timeout: opts.timeoutMs,
    })
    let stdout = ''
    let stderr = ''
    let pending = ''
    const keep = opts.keepStdout !== false
    child.on('spawn', () => child.pid && opts.onSpawn?.(child.pid))
    child.stdout.setEncoding('utf8')
    child.stderr.setEncoding('utf8')
    child.stdout.on('data', (chunk: string) => {
      if (keep && stdout.length < MAX_KEPT) stdout += chunk
      if (!opts.onJson) return
      pending += chunk
      let nl = pending.indexOf('\n')
      while (nl >= 0) {
        const line = pending.slice(0, nl).trim()
        pending = pending.slice(nl + 1)
        if (line.startsWith('{')) {
          try {
            opts.onJson(JSON.parse(line) as Record<string, unknown>)
          } catch {
            // Not a JSON line (restic mixes a few text lines in): skipped.
          }
        }
        nl = pending.indexOf('\n')
      }
    })
    child.stderr.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-64 * 1024)
    })
    child.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT')
        reject(BackupErrors.resticMissing(`${RESTIC} was not found: install the restic package`))
      // Aborted (the plugin stops): the child got SIGTERM, and 'close' follows with it.
      else if (err.name === 'AbortError') return
      else reject(err)
    })
    child.on('close', (code, signal) => {
      if (opts.onJson && pending.trim().startsWith('{')) {
        try {
          opts.onJson(JSON.parse(pending.trim()) as Record<string, unknown>)
        } catch {
          // a cut last line
        }
      }
      resolve({ code, signal, stdout, stderr })
    })
  })
}

/** The last meaningful line of restic's stderr, without its "Fatal: " prefix. */
export function resticMessage(stderr: string): string {
  // Some errors come with a Go stack trace (the cause first, the frames, the outer message last): frames dropped.
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('{') && !/^(github\.com|golang\.org|main\.|runtime\.)|\.go:\d+$/.test(l))
  const fatal = lines.findIndex((l) => l.startsWith('Fatal:'))
  // A fatal line may end with a colon and give its cause on the next lines.
  let picked = fatal >= 0 ? lines.slice(fatal, fatal + 3).join(' ') : (lines.at(-1) ?? 'restic failed')
  if (fatal < 0 && lines.length > 1) picked = `${picked}: ${lines[0]}`
  // A REST URL's credentials never reach an answer or a log (restic usually strips them itself).
  return picked
    .replace(/^Fatal:\s*/, '')
    .replace(/(\/\/[^:/@\s]+):[^@\s]+@/g, '$1:***@')
    .slice(0, 500)
}

const NO_REPOSITORY = new RegExp(
  ['unable to open (config|repository)', 'is there a repository at', 'config file.*(no such file|does not exist)'].join(
    '|',
  ),
  'i',
)
const UNREACHABLE = new RegExp(
  [
    'ssh command exited',
    'connection refused',
    'no route to host',
    'connection reset',
    'subprocess ssh',
    'unable to start the sftp session',
    'dial tcp',
    'i/o timeout',
    'network is unreachable',
    'could not resolve',
    'name or service not known',
    'host key verification failed',
    'permission denied \\(publickey',
  ].join('|'),
  'i',
)

/** Turns a failed run into this plugin's error (stable code, restic's own words in the message). */
export function classify(result: ResticResult, what: string) {
  const text = result.stderr
  const message = `${what}: ${resticMessage(text)}`
  if (result.signal) return BackupErrors.interrupted(`${what}: restic was stopped (${result.signal})`)
  if (/wrong password or no key found/i.test(text)) return BackupErrors.wrongPassword(message)
  if (/no space left on device|disk quota exceeded/i.test(text)) return BackupErrors.targetFull(message)
  if (/repository is already locked/i.test(text)) return BackupErrors.locked(message)
  if (NO_REPOSITORY.test(text)) return BackupErrors.noRepository(message)
  if (UNREACHABLE.test(text)) return BackupErrors.unreachable(message)
  return BackupErrors.resticFailed(message)
}
