import { defineError } from '@hostd/sdk'

/** Every error code this plugin answers with (listed in the README). */
export const StackErrors = {
  notFound: defineError('HOSTD_STACKS_NOT_FOUND', 404, 'No such stack'),
  serviceNotFound: defineError('HOSTD_STACKS_SERVICE_NOT_FOUND', 404, 'No such service in this stack'),
  exists: defineError('HOSTD_STACKS_EXISTS', 409, 'A stack of that name exists'),
  composeInvalid: defineError('HOSTD_STACKS_COMPOSE_INVALID', 400, 'The compose file is not valid'),
  keyUnsupported: defineError(
    'HOSTD_STACKS_KEY_UNSUPPORTED',
    400,
    'The compose file uses a key hostd does not support',
  ),
  serviceInvalid: defineError('HOSTD_STACKS_SERVICE_INVALID', 400, 'A service is not a valid run spec'),
  needsAdmin: defineError('HOSTD_STACKS_NEEDS_ADMIN', 403, 'A service reaches the host: it needs the admin role'),
  busy: defineError('HOSTD_STACKS_BUSY', 409, 'Another operation on this stack is in progress'),
  inUse: defineError('HOSTD_STACKS_IN_USE', 409, 'The stack still has containers: take it down first'),
  dependencyFailed: defineError('HOSTD_STACKS_DEPENDENCY_FAILED', 502, 'A service this one depends on did not come up'),
  adoptRefused: defineError('HOSTD_STACKS_ADOPT_REFUSED', 409, 'This project cannot be adopted'),
} as const
