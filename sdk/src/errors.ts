/**
 * Typed errors with stable codes (HOSTD_<AREA>_<WHAT>), modelled on Fastify's FST_ERR_*.
 * A handler throws one; the kernel turns it into `{ error, message }` with its status.
 */
export class HostdError extends Error {
  readonly code: string
  readonly statusCode: number
  /** Extra headers the kernel sets on the error reply (e.g. Retry-After). */
  readonly headers: Record<string, string>
  /** What the error was translated from, sent as the reply's `details` (the UI shows it under "Details"). */
  readonly details: ErrorDetails | undefined

  constructor(
    code: string,
    statusCode: number,
    message: string,
    headers: Record<string, string> = {},
    details?: ErrorDetails,
  ) {
    super(message)
    this.name = 'HostdError'
    this.code = code
    this.statusCode = statusCode
    this.headers = headers
    this.details = details
  }
}

/**
 * The tool's own words behind a translated error: a plugin that turns a known engine, apt or Samba message into one
 * that names the cause and the next step keeps the original here, for the curious and for bug reports.
 */
export interface ErrorDetails {
  /** The underlying tool's message, as it said it. */
  readonly raw: string
}

export interface HostdErrorFactory {
  (message?: string, headers?: Record<string, string>, details?: ErrorDetails): HostdError
  readonly code: string
  readonly statusCode: number
}

/** Declare an error once: `const NotFound = defineError('HOSTD_X_NOT_FOUND', 404, 'No such x')`. */
export function defineError(code: string, statusCode: number, defaultMessage: string): HostdErrorFactory {
  if (!/^HOSTD_[A-Z0-9]+(_[A-Z0-9]+)+$/.test(code))
    throw new TypeError(`error code ${code} is not of the form HOSTD_<AREA>_<WHAT>`)
  const factory = (message?: string, headers?: Record<string, string>, details?: ErrorDetails) =>
    new HostdError(code, statusCode, message ?? defaultMessage, headers, details)
  return Object.assign(factory, { code, statusCode })
}

/** Errors every plugin may use; plugins define their own for anything more specific. */
export const errors = {
  badRequest: defineError('HOSTD_REQUEST_INVALID', 400, 'Invalid input'),
  unauthorized: defineError('HOSTD_AUTH_REQUIRED', 401, 'Sign in first'),
  forbidden: defineError('HOSTD_AUTH_FORBIDDEN', 403, 'Your role does not allow this'),
  notFound: defineError('HOSTD_RESOURCE_NOT_FOUND', 404, 'Not found'),
  conflict: defineError('HOSTD_RESOURCE_CONFLICT', 409, 'Conflict'),
  tooLarge: defineError('HOSTD_REQUEST_TOO_LARGE', 413, 'Request too large'),
  privilegesMissing: defineError(
    'HOSTD_HELPER_UNAVAILABLE',
    423,
    'Admin Privileges missing: the root helper is not reachable',
  ),
  unavailable: defineError('HOSTD_SERVICE_UNAVAILABLE', 503, 'Service unavailable'),
} as const
