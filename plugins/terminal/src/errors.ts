import { defineError } from '@hostd/sdk'

/**
 * Every error code of the terminal socket (README.md). They travel in `{"type":"error"}` frames; those that end the
 * socket close it with 4000 + the status (4429, 4408, 4503, 4500).
 */
export const TerminalErrors = {
  badFrame: defineError(
    'HOSTD_TERMINAL_BAD_FRAME',
    400,
    'Text frames must be {"type":"resize","cols":N,"rows":N}, {"type":"pause"} or {"type":"resume"}',
  ),
  tooManySessions: defineError('HOSTD_TERMINAL_TOO_MANY_SESSIONS', 429, 'Too many open terminals'),
  idle: defineError('HOSTD_TERMINAL_IDLE', 408, 'The terminal was idle too long'),
  unavailable: defineError('HOSTD_TERMINAL_UNAVAILABLE', 503, 'The terminal is unavailable'),
  spawnFailed: defineError('HOSTD_TERMINAL_SPAWN_FAILED', 500, 'The shell could not be started'),
} as const
