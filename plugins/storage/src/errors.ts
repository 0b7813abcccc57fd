import { defineError } from '@hostd/sdk'

/** The storage plugin's stable error codes (see README). */
export const StorageErrors = {
  rootNotFound: defineError('HOSTD_STORAGE_ROOT_NOT_FOUND', 404, 'No file root by that name'),
  pathForbidden: defineError('HOSTD_STORAGE_PATH_FORBIDDEN', 403, 'The path leaves its root'),
  pathInvalid: defineError('HOSTD_STORAGE_PATH_INVALID', 400, 'The path is not valid'),
  accessDenied: defineError('HOSTD_STORAGE_ACCESS_DENIED', 403, 'The daemon may not open this path'),
  notFound: defineError('HOSTD_STORAGE_NOT_FOUND', 404, 'No such file or directory'),
  notADirectory: defineError('HOSTD_STORAGE_NOT_A_DIRECTORY', 400, 'Not a directory'),
  notAFile: defineError('HOSTD_STORAGE_NOT_A_FILE', 400, 'Not a regular file'),
  binaryFile: defineError('HOSTD_STORAGE_BINARY_FILE', 415, 'This file is not text; download it instead'),
  rangeNotSatisfiable: defineError(
    'HOSTD_STORAGE_RANGE_NOT_SATISFIABLE',
    416,
    'The requested range lies outside the file',
  ),
  fileExists: defineError(
    'HOSTD_STORAGE_FILE_EXISTS',
    409,
    'A file by that name exists; send overwrite=1 to replace it',
  ),
  uploadTooLarge: defineError('HOSTD_STORAGE_UPLOAD_TOO_LARGE', 413, 'The upload is larger than the limit'),
  uploadNotRaw: defineError(
    'HOSTD_STORAGE_UPLOAD_NOT_RAW',
    415,
    'Send the file itself as the request body (Content-Type application/octet-stream)',
  ),
  diskNotFound: defineError('HOSTD_STORAGE_DISK_NOT_FOUND', 404, 'No such disk'),
  noSmart: defineError('HOSTD_STORAGE_NO_SMART', 409, 'This device has no SMART data'),
  notRemovable: defineError('HOSTD_STORAGE_NOT_REMOVABLE', 409, 'This disk is not removable'),
  diskBusy: defineError('HOSTD_STORAGE_DISK_BUSY', 409, 'The disk is mounted; unmount it first'),
  shareInvalid: defineError('HOSTD_STORAGE_SHARE_INVALID', 400, 'The share is not valid'),
  shareExists: defineError('HOSTD_STORAGE_SHARE_EXISTS', 409, 'A share by that name exists'),
  shareNotFound: defineError('HOSTD_STORAGE_SHARE_NOT_FOUND', 404, 'No share by that name'),
  exportOutsideRoots: defineError(
    'HOSTD_STORAGE_EXPORT_OUTSIDE_ROOTS',
    403,
    'Only folders inside the file roots can be shared',
  ),
  smbdUnavailable: defineError('HOSTD_STORAGE_SMBD_UNAVAILABLE', 503, 'Samba (smbd) did not take the new share list'),
  intoItself: defineError('HOSTD_STORAGE_INTO_ITSELF', 400, 'A folder cannot be moved or copied into itself'),
  notAnImage: defineError('HOSTD_STORAGE_NOT_AN_IMAGE', 415, 'This file is not an image the browser can show'),
  imageTooLarge: defineError('HOSTD_STORAGE_IMAGE_TOO_LARGE', 413, 'The image is larger than the thumbnail limit'),
  // Samba's own errors, translated (samba.ts): each says the cause and the next step; the raw text goes in details.
  smbdNotRunning: defineError('HOSTD_STORAGE_SMBD_NOT_RUNNING', 503, 'Samba is not running: start it, then try again'),
  serviceManagerUnreachable: defineError(
    'HOSTD_STORAGE_SERVICE_MANAGER_UNREACHABLE',
    503,
    'The service manager (systemd) cannot be reached, so Samba cannot be started or reloaded through it',
  ),
  smbConfInvalid: defineError(
    'HOSTD_STORAGE_SMB_CONF_INVALID',
    503,
    "Samba's configuration cannot be read: run testparm to find the error",
  ),
  sambaMissing: defineError('HOSTD_STORAGE_SAMBA_MISSING', 501, 'Samba is not installed: install the samba package'),
} as const
