/**
 * Two-factor codes computed in the test from the secret, with the same library an authenticator app's maths
 * follows (otplib, RFC 6238: SHA-1, 6 digits, 30 s). A code is accepted once and never one of an earlier step, so a
 * test that needs several codes in a row takes the next steps (`codeAt(step + n)`), which the server's one-step skew
 * accepts while the clock is still on the step before.
 */
import { generateSync } from 'otplib'
import type { TestKernel } from '@hostd/kernel/testing'

export const PERIOD = 30

/** The time step (30 s) we are in now. */
export const currentStep = () => Math.floor(Date.now() / 1000 / PERIOD)

/** The code of `secret` for a time step (default: now). */
export const totp = (secret: string, step = currentStep()) => generateSync({ secret, epoch: step * PERIOD })

export interface Enrolled {
  secret: string
  recoveryCodes: string[]
  /** The step the enrollment's code used: codes of later steps are the ones still accepted. */
  step: number
}

/** Turns two-factor on for a user through the kernel's own service, with a code of the current step. */
export async function enrollTwoFactor(t: TestKernel, userId: string): Promise<Enrolled> {
  await t.kernel.services.twoFactor.disable(userId)
  const { secret } = await t.kernel.services.twoFactor.start(userId)
  const step = currentStep()
  const recoveryCodes = await t.kernel.services.twoFactor.confirm(userId, totp(secret, step))
  return { secret, recoveryCodes, step }
}
