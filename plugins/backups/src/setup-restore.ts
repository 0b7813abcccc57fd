/**
 * hostd restored at first-run setup (the kernel's `/api/setup/restore` routes, open only while the instance has no
 * users): the repository and password as the recovery kit gives them, never stored; the password in an owner-only
 * file for the run's length. The restore itself is the command line's (restore-hostd.ts).
 */
import { join } from 'node:path'
import type { SetupRestoreService, SetupSnapshot } from './api.ts'
import { BackupErrors } from './errors.ts'
import { restoreHostd } from './restore-hostd.ts'
import { classify, runRestic, type ResticTarget } from './restic.ts'
import { SecretFiles } from './secrets.ts'

/**
 * The repository names accepted from an unauthenticated caller: an absolute folder, a REST URL, or SFTP with a plain
 * user and host (never one that ssh would read as an option).
 */
const ACCEPTED = [
  /^\/[^\0]*$/,
  /^rest:https?:\/\/[^\s]+$/,
  /^sftp:[A-Za-z0-9._][A-Za-z0-9._-]*@[A-Za-z0-9.][A-Za-z0-9.-]*:\/[^\0\s]*$/,
]

export function checkedRepository(repository: string): string {
  const r = repository.trim()
  if (r.length > 2048 || !ACCEPTED.some((re) => re.test(r)))
    throw BackupErrors.invalid(
      'The repository must be a folder (/mnt/usb/backups), rest:https://user:password@host/path or sftp:user@host:/path',
    )
  return r
}

export function setupRestorer(dataDir: string): SetupRestoreService {
  const withTarget = async <T>(repository: string, password: string, fn: (t: ResticTarget) => Promise<T>) => {
    if (!password) throw BackupErrors.invalid('The repository password is missing')
    const files = new SecretFiles(join(dataDir, 'backups', 'run'))
    try {
      const passwordFile = await files.write('password', password)
      return await fn({ repository: checkedRepository(repository), passwordFile, options: [], env: {} })
    } finally {
      await files.dispose()
    }
  }
  return {
    snapshots: (repository, password) =>
      withTarget(repository, password, async (target) => {
        const res = await runRestic(target, ['snapshots', '--json', '--tag', 'hostd'], { timeoutMs: 120_000 })
        if (res.code !== 0) throw classify(res, 'restic snapshots')
        const list = JSON.parse(res.stdout || '[]') as {
          id: string
          short_id?: string
          time: string
          hostname: string
          tags?: string[]
        }[]
        return list
          .map(
            (s): SetupSnapshot => ({
              id: s.id,
              shortId: s.short_id ?? s.id.slice(0, 8),
              time: s.time,
              hostname: s.hostname,
              job: (s.tags ?? []).find((t) => t.startsWith('job:'))?.slice(4) ?? null,
            }),
          )
          .sort((a, b) => b.time.localeCompare(a.time))
      }),
    restore: (repository, password, snapshot, into) =>
      withTarget(repository, password, async (target) => {
        if (!/^[0-9a-f]{8,64}$/.test(snapshot)) throw BackupErrors.invalid('The snapshot must be a restic snapshot id')
        const out = await restoreHostd(target, into, snapshot)
        return { snapshot: out.snapshot }
      }),
  }
}
