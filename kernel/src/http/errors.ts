import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { type ErrorDetails, HostdError, defineError, errors } from '@hostd/sdk'
import { storageFullError } from '../db/storage.ts'

/** Kernel error codes; the ones plugins share come from the sdk. Plugins define theirs with defineError. */
export const KernelErrors = {
  validation: errors.badRequest,
  malformedJson: defineError('HOSTD_REQUEST_MALFORMED_JSON', 400, 'The request body is not valid JSON'),
  emptyBody: defineError('HOSTD_REQUEST_EMPTY_BODY', 400, 'The request body is empty'),
  tooLarge: errors.tooLarge,
  mediaType: defineError('HOSTD_REQUEST_MEDIA_TYPE', 415, 'Unsupported content type'),
  routeNotFound: defineError('HOSTD_ROUTE_NOT_FOUND', 404, 'No such route'),
  unauthenticated: errors.unauthorized,
  forbidden: errors.forbidden,
  crossOrigin: defineError('HOSTD_AUTH_CROSS_ORIGIN', 403, 'Request from another origin refused'),
  sessionRequired: defineError(
    'HOSTD_AUTH_SESSION_REQUIRED',
    403,
    'API tokens cannot do this: sign in with your password',
  ),
  reauthRequired: defineError(
    'HOSTD_AUTH_REAUTH_REQUIRED',
    403,
    'Confirm your password to continue: this change needs a sign-in from the last few minutes',
  ),
  tokenScope: defineError('HOSTD_AUTH_TOKEN_SCOPE', 403, 'This API token may not call this path'),
  enrollmentRequired: defineError(
    'HOSTD_AUTH_TWO_FACTOR_ENROLLMENT_REQUIRED',
    403,
    'Turn on two-factor sign-in first: the administrator requires it for your account',
  ),
  internal: defineError('HOSTD_INTERNAL_ERROR', 500, 'Internal error'),
  pluginUnavailable: defineError('HOSTD_PLUGIN_UNAVAILABLE', 503, 'This feature is unavailable'),
  pluginNotFound: defineError('HOSTD_PLUGIN_NOT_FOUND', 404, 'No such plugin'),
} as const

const FASTIFY_CODES: Record<string, (message: string) => HostdError> = {
  FST_ERR_CTP_INVALID_JSON_BODY: () => KernelErrors.malformedJson(),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => KernelErrors.emptyBody(),
  FST_ERR_CTP_BODY_TOO_LARGE: () => KernelErrors.tooLarge('The request body is too large'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => KernelErrors.validation('Content-Length does not match the body'),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: (m) => KernelErrors.mediaType(m),
  FST_ERR_CTP_INVALID_TYPE: (m) => KernelErrors.mediaType(m),
  FST_ERR_VALIDATION: (m) => KernelErrors.validation(m),
}

/** Any thrown value becomes a HostdError; anything unexpected becomes a 500 that tells nothing inside. */
export function toHostdError(err: unknown): HostdError {
  if (err instanceof HostdError) return err
  const e = err as Partial<FastifyError> & { validation?: unknown }
  if (e?.validation) return KernelErrors.validation(e.message)
  if (e?.code && FASTIFY_CODES[e.code]) return FASTIFY_CODES[e.code]!(e.message ?? '')
  if (err instanceof SyntaxError && e.statusCode === 400) return KernelErrors.malformedJson()
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return new HostdError('HOSTD_REQUEST_INVALID', e.statusCode, e.message || 'Invalid request')
  }
  // A write that found the disk full: 507 naming the disk, not a bare 500.
  return storageFullError(err) ?? KernelErrors.internal()
}

export function errorBody(err: HostdError): { error: string; message: string; details?: ErrorDetails } {
  return err.details
    ? { error: err.code, message: err.message, details: err.details }
    : { error: err.code, message: err.message }
}

export function errorHandler(this: unknown, err: unknown, req: FastifyRequest, reply: FastifyReply): void {
  const mapped = toHostdError(err)
  if ((err as Partial<FastifyError>)?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    // Name the limit: the route's own words, or its size.
    const limit = req.routeOptions.bodyLimit
    mapped.message =
      req.routeOptions.config?.bodyLimitMessage ??
      `The request body is too large: the limit is ${Math.round((limit / 1048576) * 10) / 10} MiB`
  }
  if (mapped.statusCode >= 500) req.log.error({ err, reqId: req.id }, 'request failed')
  if (mapped.code === 'HOSTD_INTERNAL_ERROR')
    mapped.message = `Internal error (request ${req.id}); the daemon log has the details`
  reply.code(mapped.statusCode).headers(mapped.headers).type('application/json; charset=utf-8').send(errorBody(mapped))
}

export function notFoundHandler(req: FastifyRequest, reply: FastifyReply): void {
  const path = req.url.split('?')[0]
  const err = KernelErrors.routeNotFound(`No route ${req.method} ${path}`)
  reply.code(404).type('application/json; charset=utf-8').send(errorBody(err))
}
