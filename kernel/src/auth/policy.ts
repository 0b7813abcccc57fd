import type { Settings } from '@hostd/sdk'

/** Who must have two-factor on: nobody (the default), every admin, or everyone. */
export const TWO_FACTOR_REQUIREMENTS = ['nobody', 'admins', 'everyone'] as const
export type TwoFactorRequirement = (typeof TWO_FACTOR_REQUIREMENTS)[number]

const SETTING = 'auth.requireTwoFactor'

/**
 * The admin's two-factor policy, held in memory (read on every request with the session row, so it costs no query)
 * and kept in the kernel's settings. A user it covers who has no two-factor yet gets a session that can only enroll,
 * read /api/auth/me and sign out (HOSTD_AUTH_TWO_FACTOR_ENROLLMENT_REQUIRED elsewhere).
 */
export class TwoFactorPolicy {
  #requirement: TwoFactorRequirement = 'nobody'
  readonly #settings: Settings

  constructor(settings: Settings) {
    this.#settings = settings
  }

  get requirement(): TwoFactorRequirement {
    return this.#requirement
  }

  async load(): Promise<void> {
    const stored = await this.#settings.get<string>(SETTING)
    this.#requirement = (TWO_FACTOR_REQUIREMENTS as readonly string[]).includes(stored ?? '')
      ? (stored as TwoFactorRequirement)
      : 'nobody'
  }

  async set(requirement: TwoFactorRequirement): Promise<void> {
    await this.#settings.set(SETTING, requirement)
    this.#requirement = requirement
  }

  /** Whether the policy covers a user of this role. */
  covers(role: string): boolean {
    return this.#requirement === 'everyone' || (this.#requirement === 'admins' && role === 'admin')
  }

  /** True when this user must enroll in two-factor before doing anything else. */
  mustEnroll(role: string, twoFactor: boolean | number): boolean {
    return !twoFactor && this.#requirement !== 'nobody' && this.covers(role)
  }
}
