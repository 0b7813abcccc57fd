import { defineError } from '@hostd/sdk'

/** Every error code of the desktop plugin (README.md). */
export const DesktopErrors = {
  unavailable: defineError('HOSTD_DESKTOP_UNAVAILABLE', 503, 'No VNC server answers on the configured target'),
  idle: defineError('HOSTD_DESKTOP_IDLE', 408, 'The remote desktop was idle too long'),
} as const
