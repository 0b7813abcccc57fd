import { defineError } from '@hostd/sdk'

/** The packages plugin's stable error codes (see README). */
export const PackageErrors = {
  invalidRequest: defineError('HOSTD_PACKAGES_REQUEST_INVALID', 400, 'The package request is not valid'),
  invalidName: defineError('HOSTD_PACKAGES_NAME_INVALID', 400, 'Not a valid Debian package name'),
  busy: defineError('HOSTD_PACKAGES_BUSY', 409, 'Another package job is running'),
  queryFailed: defineError('HOSTD_PACKAGES_QUERY_FAILED', 502, 'dpkg or apt could not be read'),
} as const
