/**
 * apt's machine-readable progress (APT::Status-Fd, apt's doc/progress-reporting.md), one line each:
 *   dlstatus:<item>:<percent>:<text>        downloading
 *   pmstatus:<package>:<percent>:<text>     dpkg at work (package "dpkg-exec" while dpkg itself starts)
 *   pmerror:<package>:<percent>:<text>      dpkg failed on a package
 *   pmconffile:<file>:<percent>:<text>      a configuration file prompt (answered by --force-confold here)
 * The percent counts from 0 to 100 twice: once over the downloads (dlstatus), once over dpkg's work (pm*). The middle
 * field may hold ":" itself (pkg:arch, never all digits), so the percent is the first ":<number>:". Other lines
 * (media-change) are not progress; the socket passes them on as lines.
 */
export type ProgressPhase =
  | 'download'
  | 'install'
  | 'configure'
  | 'remove'
  | 'purge'
  | 'trigger'
  | 'dpkg'
  | 'error'
  | 'conffile'

export interface Progress {
  type: 'progress'
  phase: ProgressPhase
  /** The package the step is about, or null (a download item, dpkg starting). */
  package: string | null
  /** 0 to 100: of the downloads in the download phase, of dpkg's work in the others. */
  percent: number
  text: string
}

const LINE = /^(dlstatus|pmstatus|pmerror|pmconffile):(.*?):(\d+(?:\.\d+)?):(.*)$/s
// apt's own words for each dpkg step (apt-pkg/deb/dpkgpm.cc); the helper runs apt with LC_ALL=C.
const STEPS: [RegExp, ProgressPhase][] = [
  [/^(Preparing to completely remove|Completely removed)/, 'purge'],
  [/^(Preparing for removal|Removing|Removed)/, 'remove'],
  [/^(Preparing to configure|Configuring)/, 'configure'],
  [/^Running post-installation trigger/, 'trigger'],
  [/^(Preparing|Unpacking|Installing|Installed)/, 'install'],
]

export function parseStatusLine(line: string): Progress | null {
  const m = LINE.exec(line)
  if (!m) return null
  const [, kind, subject, percent, text] = m as unknown as [string, string, string, string, string]
  const progress = {
    type: 'progress' as const,
    package: null as string | null,
    percent: Math.min(100, Math.round(Number(percent) * 10) / 10),
    text,
  }
  switch (kind) {
    case 'dlstatus':
      return { ...progress, phase: 'download' }
    case 'pmerror':
      return { ...progress, phase: 'error', package: subject }
    case 'pmconffile':
      return { ...progress, phase: 'conffile' }
    default: {
      const phase = STEPS.find(([pattern]) => pattern.test(text))?.[1] ?? 'dpkg'
      return { ...progress, phase, package: subject === 'dpkg-exec' ? null : subject }
    }
  }
}
