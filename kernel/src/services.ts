import type { KernelConfig } from './config.ts'
import type { KernelAudit } from './audit/service.ts'
import type { UserService } from './users/service.ts'
import type { SessionStore } from './auth/sessions.ts'
import type { LoginThrottle } from './auth/throttle.ts'
import type { TwoFactorService } from './auth/two-factor.ts'
import type { TwoFactorPolicy } from './auth/policy.ts'
import type { LoginChallenges } from './auth/challenges.ts'
import type { PluginRegistry } from './plugins/registry.ts'
import type { SetupState } from './setup-restore.ts'

/** What the kernel's own route modules are handed. Plugins get services through tokens instead. */
export interface KernelServices {
  config: KernelConfig
  version: string
  commit: string
  apiVersion: string
  users: UserService
  /** Sessions, and API tokens (`sessions.apiTokens`). */
  sessions: SessionStore
  throttle: LoginThrottle
  twoFactor: TwoFactorService
  /** The admin's two-factor policy. */
  policy: TwoFactorPolicy
  /** Sign-ins waiting for their two-factor code. */
  challenges: LoginChallenges
  audit: KernelAudit
  /** First-run setup's restore from a backup (setup-restore.ts): open while no user exists, closed once begun. */
  setup: SetupState
  /** A getter: the registry is built after the kernel routes it must not shadow. */
  registry: () => PluginRegistry
}
