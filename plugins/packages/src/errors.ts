import { defineError } from '@hostd/sdk'

/** The packages plugin's stable error codes (see README). */
export const PackageErrors = {
  invalidRequest: defineError('HOSTD_PACKAGES_REQUEST_INVALID', 400, 'The package request is not valid'),
  invalidName: defineError('HOSTD_PACKAGES_NAME_INVALID', 400, 'Not a valid Debian package name'),
  busy: defineError('HOSTD_PACKAGES_BUSY', 409, 'Another package job is running'),
  queryFailed: defineError('HOSTD_PACKAGES_QUERY_FAILED', 502, 'dpkg or apt could not be read'),
  notInstalled: defineError('HOSTD_PACKAGES_NOT_INSTALLED', 404, 'That package is not installed'),
  essential: defineError(
    'HOSTD_PACKAGES_ESSENTIAL',
    409,
    'That package is essential to this system: hostd does not remove it',
  ),
  // apt's and dpkg's known errors, translated (src/apt-errors.ts); the raw text goes in `details.raw`.
  offline: defineError('HOSTD_PACKAGES_OFFLINE', 503, 'No internet connection: apt could not reach its mirror'),
  locked: defineError('HOSTD_PACKAGES_LOCKED', 409, 'Another package manager is running: wait for it, then try again'),
  unmetDependencies: defineError(
    'HOSTD_PACKAGES_UNMET_DEPENDENCIES',
    409,
    'apt cannot satisfy the dependencies of this change',
  ),
  notFound: defineError('HOSTD_PACKAGES_NOT_FOUND', 404, "No such package in apt's lists"),
} as const
