import type { SessionUser } from '@hostd/sdk'

/** The signed-in user as the kernel sees it on a request, by session or API token: plugins see the SessionUser part. */
export interface AuthUser extends SessionUser {
  twoFactor: boolean
  /** The two-factor policy covers this user, who has not enrolled: only enrollment, /api/auth/me and sign-out answer. */
  mustEnroll: boolean
}
