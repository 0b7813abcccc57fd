/**
 * An unprivileged unix account for tests of features that must not run as the daemon's user or as root (the
 * terminal's shell, widget scripts). Created once, idempotently, with useradd (the tests run as root); never removed,
 * so parallel test files and later runs share it.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

const run = promisify(execFile)

export interface UnixAccount {
  name: string
  uid: number
  gid: number
  home: string
  shell: string
}

async function lookup(name: string): Promise<UnixAccount | null> {
  const { stdout } = await run('getent', ['passwd', name]).catch(() => ({ stdout: '' }))
  const fields = stdout.trim().split(':')
  if (fields.length < 7) return null
  return { name, uid: Number(fields[2]), gid: Number(fields[3]), home: fields[5]!, shell: fields[6]! }
}

/** The account `name` (default `hostd-test`), with a home and /bin/bash, created if missing. */
export async function ensureTestAccount(name = 'hostd-test'): Promise<UnixAccount> {
  const found = await lookup(name)
  if (found) return found
  // Two test files may race to create it: a failure is fine as long as the account exists afterwards.
  await run('useradd', ['--create-home', '--shell', '/bin/bash', '--user-group', name]).catch(() => undefined)
  const made = await lookup(name)
  if (!made) throw new Error(`could not create the test account ${name} (the tests need root for useradd)`)
  return made
}
