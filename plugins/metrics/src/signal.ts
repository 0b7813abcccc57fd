import { HostdError, type AuditActor, type AuditService, type HelperClient } from '@hostd/sdk'
import { readProcFile } from './adapters/proc-files.ts'
import { commandLine, parsePidStat, processName } from './adapters/process-parse.ts'
import { MetricsErrors } from './errors.ts'
import type { ProcessSignal, ProcessSignalResult } from './schemas.ts'

/** The root helper's action: `kill -s <TERM|KILL> -- <pid>` (helper/hostd-helper.py; it refuses pid 1 and itself). */
export const SIGNAL_ACTION = 'process.signal'

interface SignalDeps {
  helper: HelperClient
  audit: AuditService
  /** Where /proc is (`/proc`). */
  proc: string
  /** The daemon's own pid (`process.pid`): ending it from its own page is refused. */
  selfPid: number
}

/**
 * Sends TERM (ask to end) or KILL (end at once) to one process through the root helper, audited as
 * `process.signal` with the process's name and command line. Refused with a clear error: pid 1 (init: the host
 * would go down; use System > Restart), the daemon itself (use System > Restart hostd), the root helper, a pid no
 * process has.
 */
export async function signalProcess(
  d: SignalDeps,
  pid: number,
  signal: ProcessSignal,
  actor: AuditActor,
): Promise<ProcessSignalResult> {
  if (pid === 1)
    throw MetricsErrors.processProtected(
      'PID 1 is the init system: ending it takes the whole host down. Use Restart or Shut down on the System page instead.',
    )
  if (pid === d.selfPid)
    throw MetricsErrors.processProtected(
      'This is hostd itself: ending it would end this page too. Restart hostd from the command line (systemctl restart hostd) instead.',
    )
  const stat = parsePidStat(readProcFile(`${d.proc}/${pid}/stat`) ?? '')
  if (!stat)
    throw MetricsErrors.processNotFound(`No process has PID ${pid} (it may have ended already); refresh the list`)
  const cmdline = readProcFile(`${d.proc}/${pid}/cmdline`)
  const name = processName(cmdline, stat.comm)
  const facts = { pid, name, command: commandLine(cmdline).slice(0, 200), signal }
  let run: { dryRun?: boolean; argv?: string[] }
  try {
    run = await d.helper.call(SIGNAL_ACTION, { pid, signal })
  } catch (err) {
    const translated = translate(err, pid, name)
    await d.audit.record(
      {
        action: 'process.signal',
        target: `${pid} ${name}`,
        result: 'failure',
        detail: { ...facts, error: translated.message },
      },
      actor,
    )
    throw translated
  }
  const dryRun = run?.dryRun === true
  await d.audit.record(
    {
      action: 'process.signal',
      target: `${pid} ${name}`,
      detail: { ...facts, dryRun, ...(dryRun ? { argv: run.argv } : {}) },
    },
    actor,
  )
  return { pid, name, signal, dryRun, ...(dryRun && run.argv ? { argv: run.argv } : {}) }
}

/** The helper's and kill's known answers, as errors that say what happened and what to do. */
function translate(err: unknown, pid: number, name: string): Error {
  if (!(err instanceof HostdError)) return err as Error
  const raw = err.message
  if (/No such process/i.test(raw))
    return MetricsErrors.processNotFound(`${name} (PID ${pid}) has already ended; refresh the list`, undefined, { raw })
  if (/root helper itself/i.test(raw))
    return MetricsErrors.processProtected(
      `${name} (PID ${pid}) is hostd's root helper: ending it takes Admin Privileges away. Restart it with systemctl restart hostd-helper instead.`,
      undefined,
      { raw },
    )
  if (err.code === 'HOSTD_HELPER_UNKNOWN_ACTION')
    return MetricsErrors.signalUnsupported(
      'The root helper running on this host is older than hostd and cannot end processes: update and restart hostd-helper (systemctl restart hostd-helper).',
      undefined,
      { raw },
    )
  return err
}
