/**
 * The terminal's settings (from the environment, read at activation) and the unix account its shells run as,
 * looked up on every open so a changed account (shell, home, removed) is seen at once.
 */
import { execFile } from 'node:child_process'
import { access, constants, stat } from 'node:fs/promises'
import { userInfo } from 'node:os'
import { basename } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

export interface TerminalConfig {
  /** HOSTD_TERMINAL_USER: the account shells run as; null means the daemon's own account. */
  user: string | null
  /** HOSTD_TERMINAL_MAX_SESSIONS: open terminals per hostd user (default 5). */
  maxSessions: number
  /** HOSTD_TERMINAL_IDLE_SECONDS: a terminal with no input and no output this long is closed; 0 never (default 3600). */
  idleSeconds: number
}

const USER_NAME = /^[a-z_][a-z0-9_.-]{0,31}\$?$/i

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]
  if (raw === undefined || raw.trim() === '') return fallback
  const value = Number(raw)
  if (!Number.isSafeInteger(value) || value < min || value > max)
    throw new Error(`${name} must be an integer from ${min} to ${max} (got "${raw}")`)
  return value
}

/** Reads and checks the settings; a bad value throws, which fails the plugin's load with that message. */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env): TerminalConfig {
  const user = env.HOSTD_TERMINAL_USER?.trim() || null
  if (user !== null && !USER_NAME.test(user))
    throw new Error(`HOSTD_TERMINAL_USER "${user}" is not a unix account name`)
  return {
    user,
    maxSessions: integer(env, 'HOSTD_TERMINAL_MAX_SESSIONS', 5, 1, 100),
    idleSeconds: integer(env, 'HOSTD_TERMINAL_IDLE_SECONDS', 3600, 0, 7 * 24 * 3600),
  }
}

export interface Account {
  name: string
  uid: number
  gid: number
  home: string
  shell: string
}

/** How a shell is started for an account: the program and its arguments (a login shell either way). */
export interface Launch {
  account: Account
  file: string
  args: string[]
  cwd: string
}

const SETPRIV_PATHS = ['/usr/bin/setpriv', '/bin/setpriv']
const NO_LOGIN = new Set(['nologin', 'false'])

async function lookupAccount(name: string): Promise<Account | null> {
  // getent, not /etc/passwd: accounts may come from NSS (LDAP, sssd).
  const { stdout } = await run('getent', ['passwd', name], { timeout: 5000 }).catch(() => ({ stdout: '' }))
  const fields = stdout.split('\n')[0]!.split(':')
  if (fields.length < 7) return null
  return {
    name: fields[0]!,
    uid: Number(fields[2]),
    gid: Number(fields[3]),
    home: fields[5] || '/',
    shell: fields[6] || '/bin/sh',
  }
}

async function firstExecutable(paths: string[]): Promise<string | null> {
  for (const path of paths) {
    if (
      await access(path, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return path
  }
  return null
}

/**
 * Decides who the shell runs as and how it is started, or answers why the terminal is unavailable (a sentence an
 * admin can act on). Never root unless HOSTD_TERMINAL_USER=root says so: a root daemon without the setting refuses.
 */
export async function planLaunch(config: TerminalConfig): Promise<Launch | string> {
  const daemonUid = process.getuid?.() ?? -1
  const daemonUser = userInfo().username
  if (config.user === null && daemonUid === 0) {
    return (
      "The daemon runs as root and HOSTD_TERMINAL_USER is not set: set it to the unix account the terminal's shells " +
      "should run as (HOSTD_TERMINAL_USER=root allows root shells; see the terminal plugin's README)"
    )
  }
  const name = config.user ?? daemonUser
  const account = await lookupAccount(name)
  if (!account) return `HOSTD_TERMINAL_USER names "${name}", which is not a unix account on this host`
  if (NO_LOGIN.has(basename(account.shell)))
    return `The account ${account.name} has no login shell (its shell is ${account.shell})`
  if (!(await firstExecutable([account.shell])))
    return `The shell of ${account.name} (${account.shell}) is not an executable file`
  const cwd = await stat(account.home).then(
    (s) => (s.isDirectory() ? account.home : '/'),
    () => '/',
  )
  if (account.uid === daemonUid) return { account, file: account.shell, args: ['-l'], cwd }
  if (daemonUid !== 0) {
    return (
      `The daemon runs as ${daemonUser}, not root, so it cannot start a shell as ${account.name}: ` +
      `leave HOSTD_TERMINAL_USER unset or set it to ${daemonUser}`
    )
  }
  // node-pty's uid/gid option calls setgid and setuid but leaves root's supplementary groups in place; setpriv sets
  // the account's own groups (initgroups) as well, then execs the shell in the same process (same pid, same pty).
  const setpriv = await firstExecutable(SETPRIV_PATHS)
  if (!setpriv)
    return `setpriv (util-linux) is missing: it is needed to start a shell as ${account.name} with that account's groups`
  return {
    account,
    file: setpriv,
    args: ['--reuid', String(account.uid), '--regid', String(account.gid), '--init-groups', '--', account.shell, '-l'],
    cwd,
  }
}

const DEFAULT_PATH = '/usr/local/bin:/usr/bin:/bin'
const ROOT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
const LOCALE = /^[A-Za-z0-9_.@-]{1,64}$/

/** The shell's whole environment: nothing of the daemon's but its locale name. */
export function shellEnvironment(account: Account, daemonEnv: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const lang = daemonEnv.LANG && LOCALE.test(daemonEnv.LANG) ? daemonEnv.LANG : 'C.UTF-8'
  return {
    TERM: 'xterm-256color',
    LANG: lang,
    HOME: account.home,
    USER: account.name,
    LOGNAME: account.name,
    SHELL: account.shell,
    PATH: account.uid === 0 ? ROOT_PATH : DEFAULT_PATH,
  }
}
