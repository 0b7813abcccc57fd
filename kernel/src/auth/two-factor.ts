import { randomInt } from 'node:crypto'
import { hostname } from 'node:os'
import { Mutex, defineError } from '@hostd/sdk'
import type { KernelDatabase } from '../db/database.ts'
import { UserEntity } from '../db/entities.ts'
import { UserErrors } from '../users/service.ts'
import type { SecretBox } from './secret-box.ts'
import type { SessionStore } from './sessions.ts'

/** TOTP and QR codes are loaded on first use (docs/ARCHITECTURE.md, "Runtime": libraries a start does not need). */
const otp = () => import('otplib')

export const TwoFactorErrors = {
  alreadyOn: defineError('HOSTD_TWO_FACTOR_ALREADY_ON', 409, 'Two-factor sign-in is already on'),
  notOn: defineError('HOSTD_TWO_FACTOR_NOT_ON', 409, 'Two-factor sign-in is not on'),
  notStarted: defineError(
    'HOSTD_TWO_FACTOR_NOT_STARTED',
    409,
    'Start the enrollment first: no secret is waiting for a code',
  ),
  badCode: defineError('HOSTD_TWO_FACTOR_BAD_CODE', 400, 'That code is wrong, expired or already used'),
  resetOwn: defineError(
    'HOSTD_TWO_FACTOR_RESET_OWN',
    409,
    'Turn off your own two-factor sign-in from your account page, with your password and a code',
  ),
  required: defineError(
    'HOSTD_TWO_FACTOR_REQUIRED',
    409,
    'Your administrator requires two-factor sign-in for your account: it cannot be turned off',
  ),
} as const

/** RFC 6238 as authenticator apps expect it: SHA-1, 6 digits, 30 s steps; one step of clock skew either way. */
const PERIOD = 30
const SKEW_SECONDS = PERIOD
export const RECOVERY_CODE_COUNT = 10
/** Crockford's base32: no I, L, O or U, so a code read aloud or off paper is unambiguous. 10 characters = 50 bits. */
const RECOVERY_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'
const RECOVERY_LENGTH = 10

export interface Enrollment {
  /** Base32, for typing into an authenticator by hand. */
  secret: string
  /** The otpauth:// URI the QR code holds. */
  uri: string
  /** The QR code of `uri` as an SVG document. */
  qrSvg: string
}

export interface TwoFactorStatus {
  enabled: boolean
  recoveryCodesLeft: number
}

/** How a sign-in code was accepted. */
export type CodeKind = 'totp' | 'recovery code'

const newRecoveryCode = () => {
  let code = ''
  for (let i = 0; i < RECOVERY_LENGTH; i++) code += RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)]
  return `${code.slice(0, 5)}-${code.slice(5)}`
}

/** A recovery code as typed: case, spaces and dashes ignored; I and L read as 1, O as 0 (Crockford). */
const normalizeRecoveryCode = (code: string) =>
  code.toLowerCase().replace(/[\s-]/g, '').replace(/[il]/g, '1').replace(/o/g, '0')

/** Six digits, spaces allowed between them ("123 456"). */
const asTotp = (code: string): string | null => {
  const digits = code.replace(/\s/g, '')
  return /^\d{6}$/.test(digits) ? digits : null
}

/**
 * TOTP two-factor sign-in and recovery codes (otplib for RFC 6238, uqr for the QR code). Secrets are sealed with the
 * daemon's key and never returned after enrollment; recovery codes are stored as keyed hashes and each works once.
 * A code is accepted once: the time step it matched is remembered and that step and every earlier one are refused
 * afterwards. Every check and change of one user's factors runs under one mutex, so two requests cannot both use
 * the same code.
 */
export class TwoFactorService {
  readonly #db: KernelDatabase
  readonly #box: SecretBox
  readonly #sessions: SessionStore
  readonly #mutex = new Mutex()
  readonly #issuer = `hostd (${hostname()})`

  constructor(db: KernelDatabase, box: SecretBox, sessions: SessionStore) {
    this.#db = db
    this.#box = box
    this.#sessions = sessions
  }

  async status(userId: string): Promise<TwoFactorStatus> {
    const row = await this.#row(this.#db.em(), userId)
    return { enabled: row.twoFactor, recoveryCodesLeft: row.twoFactor ? (row.recoveryCodes?.length ?? 0) : 0 }
  }

  /** A new secret waiting for a code from it (replacing any earlier one still waiting). */
  async start(userId: string): Promise<Enrollment> {
    // Loaded before the user's changes are serialized, so a first enrollment does not hold the others up.
    const [{ generateSecret, generateURI }, { renderSVG }] = await Promise.all([otp(), import('uqr')])
    return this.#change(userId, async (row) => {
      if (row.twoFactor) throw TwoFactorErrors.alreadyOn()
      const secret = generateSecret()
      row.totpPending = this.#box.seal(secret)
      const uri = generateURI({ issuer: this.#issuer, label: row.username, secret, period: PERIOD })
      return { secret, uri, qrSvg: renderSVG(uri, { ecc: 'M', border: 2 }) }
    })
  }

  /** A valid code from the waiting secret turns two-factor on; answers the ten recovery codes (shown once). */
  confirm(userId: string, code: string): Promise<string[]> {
    return this.#change(userId, async (row) => {
      if (row.twoFactor) throw TwoFactorErrors.alreadyOn()
      const secret = row.totpPending === null || row.totpPending === undefined ? null : this.#box.open(row.totpPending)
      if (secret === null) throw TwoFactorErrors.notStarted()
      const step = await this.#matchTotp(secret, code, null)
      if (step === null) throw TwoFactorErrors.badCode()
      row.totpSecret = row.totpPending
      row.totpPending = null
      row.totpLastStep = step
      row.twoFactor = true
      return this.#newRecoveryCodes(row)
    })
  }

  /**
   * Checks a sign-in code: a TOTP code of the user's secret, or one of their recovery codes (then used up). Answers
   * how it was accepted and how many recovery codes are left, or null when it was not.
   */
  verify(userId: string, code: string): Promise<{ kind: CodeKind; recoveryCodesLeft: number } | null> {
    return this.#change(userId, async (row) => {
      if (!row.twoFactor) return null
      const left = () => row.recoveryCodes?.length ?? 0
      if (await this.#useTotp(row, code)) return { kind: 'totp', recoveryCodesLeft: left() }
      const digest = this.#box.mac(normalizeRecoveryCode(code))
      const codes = row.recoveryCodes ?? []
      if (!codes.includes(digest)) return null
      row.recoveryCodes = codes.filter((c) => c !== digest)
      return { kind: 'recovery code', recoveryCodesLeft: left() }
    })
  }

  /** New recovery codes for a valid TOTP code (the old ones stop working). */
  regenerate(userId: string, code: string): Promise<string[]> {
    return this.#change(userId, async (row) => {
      if (!row.twoFactor) throw TwoFactorErrors.notOn()
      if (!(await this.#useTotp(row, code))) throw TwoFactorErrors.badCode()
      return this.#newRecoveryCodes(row)
    })
  }

  /** Turns two-factor off (the caller checked the password and a code, or an admin reset it). */
  async disable(userId: string): Promise<{ username: string; wasOn: boolean }> {
    return this.#change(userId, async (row) => {
      const wasOn = row.twoFactor
      row.twoFactor = false
      row.totpSecret = null
      row.totpPending = null
      row.totpLastStep = null
      row.recoveryCodes = null
      return { username: row.username, wasOn }
    })
  }

  /** An admin turns another user's two-factor off; that user's sessions and API tokens end (and what they have open). */
  async reset(adminId: string, userId: string): Promise<{ username: string; wasOn: boolean }> {
    if (adminId === userId) throw TwoFactorErrors.resetOwn()
    const result = await this.disable(userId)
    this.#sessions.revokeAccess(userId)
    return result
  }

  /** The matched time step when `code` is a TOTP code of `secret` later than `after`, else null. */
  async #matchTotp(secret: string, code: string, after: number | null): Promise<number | null> {
    const token = asTotp(code)
    if (token === null) return null
    const result = await (await otp()).verify({
      secret,
      token,
      period: PERIOD,
      epochTolerance: SKEW_SECONDS,
      ...(after === null ? {} : { afterTimeStep: after }),
    })
    return result.valid && 'timeStep' in result ? (result.timeStep as number) : null
  }

  /** Accepts a TOTP code of the user's secret once: its step is remembered, so it and older ones are refused next. */
  async #useTotp(row: TwoFactorRow, code: string): Promise<boolean> {
    const secret = row.totpSecret ? this.#box.open(row.totpSecret) : null
    if (secret === null) return false
    const step = await this.#matchTotp(secret, code, row.totpLastStep ?? null)
    if (step === null) return false
    row.totpLastStep = step
    return true
  }

  #newRecoveryCodes(row: TwoFactorRow): string[] {
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode)
    row.recoveryCodes = codes.map((c) => this.#box.mac(normalizeRecoveryCode(c)))
    return codes
  }

  async #row(em: ReturnType<KernelDatabase['em']>, userId: string): Promise<TwoFactorRow> {
    const row = await em.findOne(UserEntity, { id: userId })
    if (!row) throw UserErrors.notFound()
    return row
  }

  /** Runs `change` on the user's row under the mutex and saves what it changed (also when it answers null). */
  #change<T>(userId: string, change: (row: TwoFactorRow) => Promise<T>): Promise<T> {
    return this.#mutex.run(async () => {
      const em = this.#db.em()
      const row = await this.#row(em, userId)
      const result = await change(row)
      row.updatedAt = new Date()
      await em.flush()
      return result
    })
  }
}

type TwoFactorRow = {
  username: string
  twoFactor: boolean
  totpSecret?: string | null
  totpPending?: string | null
  totpLastStep?: number | null
  recoveryCodes?: string[] | null
  updatedAt: Date
}
