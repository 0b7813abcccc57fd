import { randomBytes } from 'node:crypto'

/** A NATS password for a member's user on the embedded server: 192 random bits. */
export const newPassword = (): string => randomBytes(24).toString('base64url')
