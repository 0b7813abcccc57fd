import { signal } from '@preact/signals'
import type { Static } from '@sinclair/typebox'
import type { ChallengeSchema, MeSchema } from '../../../kernel/src/auth/schemas.ts'
import type { LoginResponseSchema } from '../../../kernel/src/users/schemas.ts'
import { ApiError, createApi } from '../kit/api.ts'
import type { SessionUser } from '../kit/context.ts'
import { pageTitles } from '../kit/layout.tsx'
import { askForPassword } from './reauth.ts'
import { here, navigate, route } from './router.ts'

export type SessionState =
  | { state: 'loading' }
  | { state: 'setup' }
  | { state: 'signed-out'; expired: boolean }
  | { state: 'signed-in'; user: SessionUser }
  /** Signed in, but the admin's policy requires two-factor first: only enrollment and sign-out work. */
  | { state: 'enroll'; user: SessionUser }

// The kernel's answers, as types only (nothing of the kernel is bundled).
/** `GET /api/auth/me`. */
type Me = Static<typeof MeSchema>
/** A completed sign-in. */
type SignedIn = Static<typeof LoginResponseSchema>
/** The first step of a sign-in for a user with two-factor: no session yet, a challenge for the code. */
type Challenge = Static<typeof ChallengeSchema>

export const session = signal<SessionState>({ state: 'loading' })

export interface Branding {
  serverName: string
  headline: string | null
  description: string | null
  background: string | null
}

/** Branding from GET /api/branding, shown as text only; "hostd" while the route is absent or fails. */
export const branding = signal<Branding>({ serverName: 'hostd', headline: null, description: null, background: null })

/** Requests that must not end the session on 401 (sign-in, the first probe). */
export const publicApi = createApi()

/** Any 401 means the session ended: show the sign-in page, and come back here after. */
export function sessionEnded(): void {
  if (session.value.state !== 'signed-in' && session.value.state !== 'enroll') return
  session.value = { state: 'signed-out', expired: true }
  if (route.value.path !== '/sign-in') navigate(`/sign-in?next=${encodeURIComponent(here())}`, { replace: true })
}

/** The shell's own API client; a change that needs the password again asks for it (reauth.tsx). */
export const api = createApi({ onUnauthorized: sessionEnded, onReauth: askForPassword })

const text = (value: unknown, max: number) =>
  typeof value === 'string' && value.trim() ? value.trim().slice(0, max) : null

async function loadBranding(): Promise<void> {
  try {
    const b = await publicApi.get<Record<string, unknown>>('/api/branding')
    const background = text(b.background, 2048)
    branding.value = {
      serverName: text(b.serverName, 100) ?? 'hostd',
      headline: text(b.headline, 200),
      description: text(b.description, 2000),
      // Only images this server serves: the page's policy allows no other origin anyway.
      background: background?.startsWith('/') && !background.startsWith('//') ? background : null,
    }
    pageTitles.setSuffix(branding.value.serverName)
  } catch {
    /* 404 until the branding route exists: keep "hostd" */
  }
}

// The branding page says when it changed something, so the header and the title follow at once.
addEventListener('hostd:branding-changed', () => void loadBranding())

/** First load: setup needed? signed in? (in parallel with the branding). */
export async function boot(): Promise<void> {
  void loadBranding()
  try {
    enter(await publicApi.get<Me>('/api/auth/me'))
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 401) throw err
    const setup = await publicApi.get<{ needsSetup: boolean }>('/api/setup')
    session.value = setup.needsSetup ? { state: 'setup' } : { state: 'signed-out', expired: false }
  }
}

function enter(me: Me | SignedIn): void {
  const user: SessionUser = { id: me.id, username: me.username, role: me.role }
  session.value = me.mustEnrollTwoFactor ? { state: 'enroll', user } : { state: 'signed-in', user }
}

/** Signs in with a password; answers the challenge of the second step when the user has two-factor (else null). */
export async function signIn(username: string, password: string): Promise<string | null> {
  const answer = await publicApi.post<SignedIn | Challenge>('/api/auth/login', { username, password })
  if ('twoFactorRequired' in answer) return answer.challenge
  enter(answer)
  return null
}

/** The second step: the challenge and a code of the authenticator app, or a recovery code. */
export async function verifySignIn(challenge: string, code: string): Promise<void> {
  enter(await publicApi.post<SignedIn>('/api/auth/login/verify', { challenge, code }))
}

/** Reads the session again (after enrolling in two-factor, or when the server says enrollment is required). */
export async function refreshSession(): Promise<void> {
  enter(await api.get<Me>('/api/auth/me'))
}

export async function signOut(): Promise<void> {
  try {
    await publicApi.post('/api/auth/logout')
  } finally {
    session.value = { state: 'signed-out', expired: false }
    navigate('/sign-in', { replace: true })
    void loadBranding() // what the sign-in page shows may have changed meanwhile
  }
}

/** After setup: the first admin signs in with the password just chosen. */
export async function completeSetup(username: string, password: string): Promise<void> {
  await publicApi.post('/api/setup', { username, password })
  await signIn(username, password)
}
