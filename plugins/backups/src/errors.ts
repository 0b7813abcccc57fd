import { defineError } from '@hostd/sdk'

/** Every error code this plugin answers with (listed in the README). */
export const BackupErrors = {
  notFound: defineError('HOSTD_BACKUPS_NOT_FOUND', 404, 'No such repository, job or snapshot'),
  invalid: defineError('HOSTD_BACKUPS_INVALID', 400, 'The request is not valid for backups'),
  pathRefused: defineError(
    'HOSTD_BACKUPS_PATH_REFUSED',
    400,
    'That path is outside the folders a restore may write to',
  ),
  inUse: defineError('HOSTD_BACKUPS_IN_USE', 409, 'The repository is used by a job'),
  busy: defineError('HOSTD_BACKUPS_BUSY', 409, 'The job is running'),
  exists: defineError('HOSTD_BACKUPS_EXISTS', 409, 'It exists already'),
  wrongPassword: defineError('HOSTD_BACKUPS_WRONG_PASSWORD', 422, 'The repository password is wrong'),
  noRepository: defineError('HOSTD_BACKUPS_NO_REPOSITORY', 422, 'There is no restic repository at that place'),
  unreachable: defineError('HOSTD_BACKUPS_UNREACHABLE', 502, 'The repository cannot be reached'),
  targetFull: defineError('HOSTD_BACKUPS_TARGET_FULL', 507, 'The backup target is full'),
  locked: defineError('HOSTD_BACKUPS_LOCKED', 409, 'The repository is locked by another restic process'),
  interrupted: defineError('HOSTD_BACKUPS_INTERRUPTED', 409, 'The run was stopped before it ended'),
  resticFailed: defineError('HOSTD_BACKUPS_RESTIC_FAILED', 502, 'restic failed'),
  resticMissing: defineError('HOSTD_BACKUPS_RESTIC_MISSING', 503, 'restic is not installed'),
  sourceFailed: defineError('HOSTD_BACKUPS_SOURCE_FAILED', 422, 'What to back up could not be prepared'),
  containersUnavailable: defineError(
    'HOSTD_BACKUPS_CONTAINERS_UNAVAILABLE',
    503,
    'The containers plugin is not running: containers cannot be backed up or restored',
  ),
} as const
