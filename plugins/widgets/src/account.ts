/**
 * The account widget scripts run as (HOSTD_WIDGETS_USER), and whether they can run at all. Never root, never the
 * daemon's own account (that one can read the database), and only when the daemon can switch to it (it runs as
 * root) and its data dir is closed to other accounts.
 */
import { execFile } from 'node:child_process'
import { lstat, mkdir, chmod } from 'node:fs/promises'
import { promisify } from 'node:util'

const run = promisify(execFile)

export interface Account {
  name: string
  uid: number
  gid: number
  home: string
}

export type AccountCheck = { ok: true; account: Account } | { ok: false; reason: string }

const NAME = /^[a-z_][a-z0-9_-]{0,31}\$?$/

async function lookup(name: string): Promise<Account | null> {
  // getent, so NSS sources (LDAP, sssd) count as well as /etc/passwd; an argument vector, never a shell.
  const { stdout } = await run('getent', ['passwd', name], { timeout: 5000 }).catch(() => ({ stdout: '' }))
  const fields = stdout.trim().split(':')
  if (fields.length < 7 || fields[0] !== name) return null
  return { name, uid: Number(fields[2]), gid: Number(fields[3]), home: fields[5] || '/' }
}

export async function checkAccount(name: string | undefined, dataDir: string, workDir: string): Promise<AccountCheck> {
  if (!name)
    return {
      ok: false,
      reason:
        'No account is configured for widget scripts: set HOSTD_WIDGETS_USER to an unprivileged user name and restart',
    }
  if (!NAME.test(name)) return { ok: false, reason: `HOSTD_WIDGETS_USER="${name}" is not a user name` }
  const account = await lookup(name)
  if (!account) return { ok: false, reason: `HOSTD_WIDGETS_USER names ${name}, which does not exist` }
  if (account.uid === 0 || account.gid === 0)
    return { ok: false, reason: `HOSTD_WIDGETS_USER=${name} is root (uid or gid 0): widget scripts never run as root` }
  const self = process.getuid?.() ?? -1
  if (account.uid === self)
    return {
      ok: false,
      reason: `HOSTD_WIDGETS_USER=${name} is the daemon's own account, which can read its database: name another one`,
    }
  if (self !== 0)
    return { ok: false, reason: 'The daemon does not run as root, so it cannot start scripts as another account' }
  const data = await lstat(dataDir).catch(() => null)
  if (data && (data.mode & 0o007) !== 0) {
    return {
      ok: false,
      reason:
        `The data dir ${dataDir} is open to other accounts (mode ${(data.mode & 0o777).toString(8)}): ` +
        'chmod 700 it so widget scripts cannot read the database',
    }
  }
  // The parent of the per-widget folders: the daemon's, traversable but not listable, never a link.
  await mkdir(workDir, { recursive: true, mode: 0o711 })
  const work = await lstat(workDir)
  if (!work.isDirectory() || work.uid !== self)
    return { ok: false, reason: `HOSTD_WIDGETS_WORK_DIR ${workDir} must be a folder owned by the daemon's account` }
  if ((work.mode & 0o777) !== 0o711) await chmod(workDir, 0o711)
  return { ok: true, account }
}
