/**
 * The root helper's `backups.restic-backup` (the backups plugin's backups of what the daemon's user may not read): run
 * for a daemon user that is not root (nobody), it backs up a root-only folder with restic running as that user plus
 * CAP_DAC_READ_SEARCH (setpriv), so the repository stays the daemon user's; its arguments are checked before anything
 * runs (a password file not the daemon user's, sftp, a relative path, an option for a path). Real restic.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHelper, type RunningHelper } from './start-helper.ts'

const NOBODY = 65534

describe('root helper: restic backup as the daemon user, reading as root', () => {
  let helper: RunningHelper
  let work: string
  const own = (path: string) => chownSync(path, NOBODY, NOBODY)
  beforeAll(async () => {
    helper = await startHelper({ uid: NOBODY, gid: NOBODY })
    work = mkdtempSync(join(tmpdir(), 'hostd-helper-restic-'))
    chmodSync(work, 0o755)
    // Root's own folder: nobody may not even list it.
    mkdirSync(join(work, 'root-only'), { mode: 0o700 })
    writeFileSync(join(work, 'root-only', 'shadow.txt'), 'root secret\n', { mode: 0o600 })
    writeFileSync(join(work, 'password'), 'a repository password', { mode: 0o600 })
    execFileSync('restic', ['init', '--repo', join(work, 'repo'), '--password-file', join(work, 'password')], {
      stdio: 'ignore',
    })
    execFileSync('chown', ['-R', `${NOBODY}:${NOBODY}`, join(work, 'repo'), join(work, 'password')])
    mkdirSync(join(work, 'cache'))
    own(join(work, 'cache'))
  })
  afterAll(async () => {
    await helper?.stop()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  /** One request as the daemon's user (nobody): every line it answers (events, then the answer). */
  function callAsDaemon(args: Record<string, unknown>): Record<string, any>[] {
    const client = `import socket,sys
s=socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b'\\n')
for line in s.makefile():
    print(line.strip())`
    const request = JSON.stringify({ action: 'backups.restic-backup', args })
    const out = spawnSync('/usr/bin/python3', ['-c', client, helper.socket, request], {
      uid: NOBODY,
      gid: NOBODY,
      cwd: '/',
      encoding: 'utf8',
    })
    if (out.stderr) throw new Error(out.stderr)
    return out.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
  }
  const valid = () => ({
    repository: join(work, 'repo'),
    passwordFile: join(work, 'password'),
    cacheDir: join(work, 'cache'),
    paths: [join(work, 'root-only')],
    tags: ['hostd', 'job:helper-test'],
  })

  it('backs up a folder the daemon user cannot read; the repository stays the daemon user’s', () => {
    expect(spawnSync('cat', [join(work, 'root-only', 'shadow.txt')], { uid: NOBODY, gid: NOBODY }).status).not.toBe(0)
    const lines = callAsDaemon(valid())
    const answer = lines.at(-1)!
    expect(answer, JSON.stringify(lines.slice(-5))).toMatchObject({ ok: true, result: { exitCode: 0 } })
    const summary = lines
      .filter((l) => l.event?.stream === 'stdout' && l.event.text.startsWith('{'))
      .map((l) => JSON.parse(l.event.text))
      .find((m) => m.message_type === 'summary')
    expect(summary).toMatchObject({ files_new: 1 })
    const env = { ...process.env, RESTIC_REPOSITORY: join(work, 'repo'), RESTIC_PASSWORD_FILE: join(work, 'password') }
    const dumped = execFileSync('restic', ['dump', 'latest', join(work, 'root-only', 'shadow.txt')], { env })
    expect(dumped.toString()).toBe('root secret\n')
    // Written as the daemon's user: its own restic goes on using the repository.
    const snapshots = execFileSync('find', [join(work, 'repo', 'snapshots'), '-type', 'f'])
      .toString()
      .trim()
    expect(statSync(snapshots).uid).toBe(NOBODY)
  })

  it('checks every argument before anything runs', async () => {
    writeFileSync(join(work, 'root-password'), 'x', { mode: 0o600 })
    const refused = (args: Record<string, unknown>) => callAsDaemon(args).at(-1)
    expect(refused({ ...valid(), passwordFile: join(work, 'root-password') })).toMatchObject({
      ok: false,
      status: 403,
      error: 'HOSTD_HELPER_PATH_REFUSED',
    })
    for (const bad of [
      { repository: 'sftp:root@127.0.0.1:/srv/repo' },
      { paths: ['relative/path'] },
      { paths: ['--files-from=/etc/shadow'] },
      { excludes: ['-x'] },
      { tags: ['--no-scan'] },
      { cacheDir: 'cache' },
      { password: 'not an argument' },
    ])
      expect(refused({ ...valid(), ...bad }), JSON.stringify(bad)).toMatchObject({
        ok: false,
        status: 400,
        error: 'HOSTD_HELPER_INVALID_ARGUMENT',
      })
    const log = (await helper.log()).filter((e) => e.action === 'backups.restic-backup')
    // The repository is never logged (a REST URL carries its credentials).
    expect(log.every((e) => e.args.repository === '<redacted>')).toBe(true)
    expect(log.filter((e) => e.outcome === 'refused').every((e) => !('argv' in e))).toBe(true)
  })
})
