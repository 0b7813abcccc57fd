/**
 * apt's and dpkg's known errors, in words that name the cause and the next step (issue 29, item 7). `translateApt`
 * reads a job's output (or a simulation's) and answers the HostdError to report, its raw lines kept in
 * `details.raw`; null when none of the known messages is there (the output then speaks for itself).
 * The messages are apt's own, with LC_ALL=C (the helper and the daemon run apt with it):
 *   Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 1234 (apt-get)
 *   E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?
 *   Could not resolve 'deb.debian.org' / Temporary failure resolving 'deb.debian.org' / Could not connect to ...
 *   The following packages have unmet dependencies: / <name> : Depends: <dependency> but it is not installable
 *   E: Unable to locate package <name> / E: Package '<name>' has no installation candidate
 */
import type { HostdError } from '@hostd/sdk'
import { PackageErrors } from './errors.ts'

/** Lines that carry apt's reason: its E:/W: lines, fetch errors, dependency lines, the lock holder. */
const REASON = new RegExp(
  [
    '^(E|W): ',
    '^Err:',
    '^\\s*\\S+ : (Pre-?)?Depends: ',
    '^\\s+(Pre-?)?Depends: ',
    'Could not get lock',
    'Could not resolve',
    'Temporary failure resolving',
    'Could not connect to',
    'unmet dependencies',
  ].join('|'),
)

function rawOf(lines: string[]): string {
  const reasons = lines.filter((l) => REASON.test(l))
  return (reasons.length ? reasons : lines.slice(-20)).join('\n').slice(-4000)
}

export function translateApt(output: string | string[]): HostdError | null {
  const lines = (typeof output === 'string' ? output.split('\n') : output).map((l) => l.trimEnd()).filter(Boolean)
  const text = lines.join('\n')
  const details = { raw: rawOf(lines) }

  const holder = /Could not get lock (\S+?)\.? It is held by process (\d+)(?: \(([^)]+)\))?/.exec(text)
  if (
    holder ||
    /Unable to acquire the dpkg frontend lock|Unable to lock the administration directory|Could not get lock/.test(text)
  ) {
    const who = holder ? ` (${holder[3] ? `${holder[3]}, ` : ''}process ${holder[2]})` : ''
    return PackageErrors.locked(
      `Another package manager is running${who} and holds dpkg's lock: wait for it to finish (an automatic update can take a few minutes), then try again.`,
      {},
      details,
    )
  }

  const unresolved = /(?:Could not resolve|Temporary failure resolving) '([^']+)'/.exec(text)
  const unreachable = /Could not connect to ([^\s:()]+)/.exec(text)
  if (unresolved || unreachable || /Network is unreachable/.test(text)) {
    const host = unresolved?.[1] ?? unreachable?.[1]
    return PackageErrors.offline(
      `No internet connection: apt could not ${unresolved ? 'resolve' : 'reach'} ${host ?? 'its mirror'}. ` +
        "Check this server's network and DNS (the Network page), then try again.",
      {},
      details,
    )
  }

  if (/unmet dependencies|Unmet dependencies/.test(text)) {
    const dep = /^\s*(\S+) : (?:Pre-?)?Depends: (.+?)(?: but .*)?$/m.exec(text)
    const what = dep ? `${dep[1]} needs ${dep[2]}, which apt cannot install` : 'apt cannot install what it needs'
    return PackageErrors.unmetDependencies(
      `Unmet dependencies: ${what}. Refresh the package lists and try again; if it stays, a source of packages is missing or out of date.`,
      {},
      details,
    )
  }

  const missing =
    /Unable to locate package (\S+)/.exec(text) ?? /Package '([^']+)' has no installation candidate/.exec(text)
  if (missing) {
    return PackageErrors.notFound(
      `No package ${missing[1]} in apt's lists: check the name, or refresh the package lists and search again.`,
      {},
      details,
    )
  }
  return null
}
