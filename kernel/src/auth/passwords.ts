import argon2 from 'argon2'
import { randomBytes } from 'node:crypto'

/** argon2id at OWASP's minimum profile: 19 MiB, 2 passes, 1 lane. */
const HASH_OPTIONS = { type: argon2.argon2id, memoryCost: 19 * 1024, timeCost: 2, parallelism: 1 } as const

export const hashPassword = (password: string): Promise<string> => argon2.hash(password, HASH_OPTIONS)

export async function verifyPassword(hash: string, password: string): Promise<boolean> {
  try {
    return await argon2.verify(hash, password)
  } catch {
    return false
  }
}

let decoyHash: Promise<string> | undefined
/** Made at start-up, so not even the first unknown-user sign-in pays for creating it. */
export function primeDecoy(): Promise<string> {
  decoyHash ??= hashPassword(randomBytes(16).toString('hex'))
  return decoyHash
}

/** Spend the same work as a real check, so an unknown user answers in the time a wrong password does. */
export async function verifyDecoy(password: string): Promise<false> {
  await verifyPassword(await primeDecoy(), password)
  return false
}

const COMMON = new Set([
  'password',
  'password1',
  'password123',
  '12345678',
  '123456789',
  '1234567890',
  'qwertyuiop',
  'qwerty123',
  'iloveyou',
  'admin123',
  'administrator',
  'letmein1',
  'welcome1',
  'changeme',
  'abcdefgh',
  '11111111',
  '00000000',
])

export const PASSWORD_MIN_LENGTH = 8
export const PASSWORD_MAX_LENGTH = 1024

/** Null when acceptable, otherwise why not (shown to the user). */
export function passwordWeakness(password: string, username?: string): string | null {
  if (password.length < PASSWORD_MIN_LENGTH) return `Password must have at least ${PASSWORD_MIN_LENGTH} characters`
  if (password.length > PASSWORD_MAX_LENGTH) return `Password must have at most ${PASSWORD_MAX_LENGTH} characters`
  if (new Set(password).size < 4) return 'Password must use at least 4 different characters'
  if (COMMON.has(password.toLowerCase())) return 'Password is too common'
  if (username && password.toLowerCase().includes(username.toLowerCase()))
    return 'Password must not contain the username'
  return null
}
