import type { AuditActor, AuditService } from './tokens.ts'

/**
 * Runs `fn` and writes one audit record of its outcome, then returns its result or throws its error: `success` with
 * `detail(result)`, or `failure` with the error's code (`error`, a HostdError's, else `'error'`) and message. Every
 * host change is audited, whichever way it ends.
 * @since 1.3.0
 */
export async function auditOutcome<T>(
  audit: AuditService,
  event: { action: string; target: string | null },
  actor: AuditActor | undefined,
  fn: () => Promise<T>,
  detail: (result: T) => Record<string, unknown> = () => ({}),
): Promise<T> {
  let result: T
  try {
    result = await fn()
  } catch (err) {
    const failure = { error: (err as { code?: string }).code ?? 'error', message: (err as Error).message }
    await audit.record({ ...event, result: 'failure', detail: failure }, actor)
    throw err
  }
  await audit.record({ ...event, result: 'success', detail: detail(result) }, actor)
  return result
}
