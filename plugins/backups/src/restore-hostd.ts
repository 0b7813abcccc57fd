/**
 * Restoring hostd itself into a fresh data folder, before the daemon starts on it: the data folder a snapshot holds
 * is put at `dataDir`, and the database's online copy (backups/staging/<job>/hostd.sqlite) becomes its database.
 * Users, tokens, two-factor (its secrets are sealed with secret.key, restored with the rest), settings, skills and
 * this plugin's repositories come back as they were at the backup.
 *
 * From the recovery kit, on a fresh install, before hostd's first start (or from the setup page: setup-restore.ts):
 *
 *   node plugins/backups/src/restore-hostd.ts --repository <repository> --password-file <file> --data-dir <folder>
 *        [--snapshot <id>]      (default: the newest snapshot tagged hostd)
 *
 * The repository as restic names it (`/mnt/usb/backups`, `sftp:user@host:/path`, `rest:https://user:pass@host/`).
 */
import { randomBytes } from 'node:crypto'
import { chmod, mkdir, readdir, rename, rm, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { parseArgs } from 'node:util'
import { BackupErrors } from './errors.ts'
import { classify, runRestic, type ResticTarget } from './restic.ts'

export interface RestoredHostd {
  snapshot: string
  /** The data folder the snapshot was taken of. */
  from: string
  dataDir: string
}

export async function restoreHostd(target: ResticTarget, dataDir: string, snapshot?: string): Promise<RestoredHostd> {
  const existing = await readdir(dataDir).catch(() => [])
  if (existing.length) throw BackupErrors.exists(`${dataDir} is not empty: restore hostd into a fresh folder`)
  const listed = await runRestic(target, ['snapshots', '--json', '--tag', 'hostd', ...(snapshot ? [snapshot] : [])])
  if (listed.code !== 0) throw classify(listed, 'restic snapshots')
  const snaps = (
    JSON.parse(listed.stdout || '[]') as { id: string; time: string; paths: string[]; tags?: string[] }[]
  ).sort((a, b) => b.time.localeCompare(a.time))
  const snap = snaps[0]
  if (!snap)
    throw BackupErrors.notFound(
      snapshot ? `No snapshot ${snapshot} of hostd` : 'No snapshot of hostd in this repository',
    )
  const job = (snap.tags ?? []).find((t) => t.startsWith('job:'))?.slice(4) ?? ''
  // The snapshot's data folder is the path holding backups/staging/<job>/hostd.sqlite.
  let from: string | null = null
  for (const path of snap.paths) {
    const res = await runRestic(target, ['ls', '--json', snap.id, join(path, 'backups', 'staging', job)])
    if (res.code === 0 && res.stdout.includes('"name":"hostd.sqlite"')) {
      from = path
      break
    }
  }
  if (!from) throw BackupErrors.notFound(`Snapshot ${snap.id.slice(0, 8)} holds no copy of hostd's database`)
  // restic puts the folder under its original absolute path in the target: a scratch folder beside the new one (so
  // the moves are renames), then its content moved in.
  await mkdir(dirname(dataDir), { recursive: true })
  const scratch = join(dirname(dataDir), `.hostd-restore-${randomBytes(4).toString('hex')}`)
  try {
    const res = await runRestic(target, ['restore', snap.id, '--target', scratch, '--include', from])
    if (res.code !== 0) throw classify(res, 'restic restore')
    await mkdir(dataDir, { recursive: true, mode: 0o700 })
    const restored = join(scratch, from)
    for (const entry of await readdir(restored)) await rename(join(restored, entry), join(dataDir, entry))
  } finally {
    await rm(scratch, { recursive: true, force: true })
  }
  const copy = join(dataDir, 'backups', 'staging', job, 'hostd.sqlite')
  if (!(await stat(copy).catch(() => null))) throw BackupErrors.notFound("The snapshot's database copy is missing")
  await rename(copy, join(dataDir, 'hostd.sqlite'))
  await chmod(join(dataDir, 'hostd.sqlite'), 0o600)
  await rm(join(dataDir, 'backups', 'staging'), { recursive: true, force: true })
  await chmod(dataDir, 0o700)
  return { snapshot: snap.id, from, dataDir }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      repository: { type: 'string' },
      'password-file': { type: 'string' },
      'data-dir': { type: 'string' },
      snapshot: { type: 'string' },
    },
  })
  if (!values.repository || !values['password-file'] || !values['data-dir']) {
    console.error(
      'usage: restore-hostd.ts --repository <repository> --password-file <file> --data-dir <folder> [--snapshot <id>]',
    )
    process.exit(2)
  }
  try {
    const out = await restoreHostd(
      { repository: values.repository, passwordFile: values['password-file'], options: [], env: {} },
      values['data-dir'],
      values.snapshot,
    )
    console.log(`restored hostd from snapshot ${out.snapshot.slice(0, 8)} (${out.from}) into ${out.dataDir}`)
  } catch (err) {
    console.error((err as Error).message)
    process.exit(1)
  }
}

if (process.argv[1] && import.meta.filename === process.argv[1]) await main()
