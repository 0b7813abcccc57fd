/**
 * The backups plugin's contract with other plugins and the kernel: the services it provides and the types they take or
 * give. Types only, so a consumer can `import type` from here (the alerts plugin) and load none of this plugin's code;
 * the consumer makes its own token with the id named in `ProvidedServices`.
 */

/** The services this plugin provides, by token id. */
export interface ProvidedServices {
  /** Read-only: each job's last success (the alerts plugin's "no backup for a while" rules). */
  'backups.status': BackupStatusService
  /**
   * hostd restored from a backup at first-run setup (the kernel's `/api/setup/restore` routes ask it, only while the
   * instance has no users). Built-in only: not exposed to third-party plugins.
   */
  'backups.setup-restore': SetupRestoreService
}

export interface BackupJobStatus {
  id: string
  name: string
  /** Minutes between scheduled runs, or null for a job run only when asked. */
  intervalMinutes: number | null
  /** When the job was made (ISO), the start of its "no success yet" time. */
  createdAt: string
  /** The end of its last successful run (ISO), or null. */
  lastSuccessAt: string | null
  /** The end of its last run, successful or not (ISO), or null. */
  lastRunAt: string | null
  running: boolean
}

export interface BackupStatusService {
  /** Every job with its last success. */
  jobs(): Promise<BackupJobStatus[]>
}

export interface SetupSnapshot {
  id: string
  shortId: string
  time: string
  hostname: string
  /** The job that made it (its tag `job:<id>`), when known. */
  job: string | null
}

export interface SetupRestoreService {
  /**
   * The snapshots of hostd's state in a repository (restic's name for it: a folder, `rest:https://user:pass@host/`,
   * `sftp:user@host:/path`), newest first; HOSTD_BACKUPS_WRONG_PASSWORD, _NO_REPOSITORY, _UNREACHABLE as a job's.
   */
  snapshots(repository: string, password: string): Promise<SetupSnapshot[]>
  /** Restores the snapshot's data folder into `into` (made here: it must not exist or be empty). */
  restore(repository: string, password: string, snapshot: string, into: string): Promise<{ snapshot: string }>
}
