import { signal } from '@preact/signals'

/** The question being asked, with whoever is waiting for its answer (reauth-dialog.tsx shows it). */
export const asking = signal<{ resolve: (ok: boolean) => void } | null>(null)

/**
 * Asks for the password again (the API client calls this when a change answers HOSTD_AUTH_REAUTH_REQUIRED: changes to
 * account security and to users need a sign-in from the last few minutes). Resolves true once the server accepted it;
 * requests asking at the same time share one question.
 */
export function askForPassword(): Promise<boolean> {
  const current = asking.value
  return new Promise((resolve) => {
    asking.value = {
      resolve: current
        ? (ok) => {
            current.resolve(ok)
            resolve(ok)
          }
        : resolve,
    }
  })
}
