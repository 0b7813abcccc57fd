/**
 * Ending everything a terminal started. The shell is a session leader (forkpty calls setsid), and an interactive
 * shell puts each job in a process group of its own, so killing the shell's process group alone would leave
 * background jobs running: every process whose session id is the shell's pid is signalled. Only a process that
 * left the session itself (setsid, a daemon) escapes, as it would escape a logout.
 */
import { readdir, readFile } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'

export interface SessionProcess {
  pid: number
  pgid: number
}

/** Field values of /proc/<pid>/stat after the command name (which may hold spaces and parentheses). */
function statFields(text: string): string[] {
  return text.slice(text.lastIndexOf(')') + 2).split(' ')
}

/** Live (not zombie) processes of session `sid`, read from /proc. */
export async function sessionProcesses(sid: number): Promise<SessionProcess[]> {
  const names = await readdir('/proc').catch(() => [] as string[])
  const found: SessionProcess[] = []
  await Promise.all(
    names.map(async (name) => {
      if (!/^\d+$/.test(name)) return
      const text = await readFile(`/proc/${name}/stat`, 'latin1').catch(() => null)
      if (!text) return
      // state, ppid, pgrp, session
      const [state, , pgrp, session] = statFields(text)
      if (Number(session) === sid && state !== 'Z' && state !== 'X')
        found.push({ pid: Number(name), pgid: Number(pgrp) })
    }),
  )
  return found
}

function signal(target: number, sig: NodeJS.Signals): void {
  try {
    process.kill(target, sig)
  } catch {
    /* gone already, or never ours to signal */
  }
}

function signalAll(members: SessionProcess[], sig: NodeJS.Signals): void {
  for (const pgid of new Set(members.map((m) => m.pgid))) signal(-pgid, sig)
  for (const m of members) signal(m.pid, sig)
}

/**
 * SIGHUP to every process of the session (each of its process groups, and each process), then SIGKILL to whatever
 * is left after `graceMs`. Resolves once none is left (or after a last second of waiting for the kills to land).
 */
export async function endSession(sid: number, graceMs = 2000, pollMs = 50): Promise<void> {
  let members = await sessionProcesses(sid)
  if (members.length === 0) return
  signalAll(members, 'SIGHUP')
  for (const deadline = Date.now() + graceMs; Date.now() < deadline; ) {
    await sleep(pollMs)
    members = await sessionProcesses(sid)
    if (members.length === 0) return
  }
  signalAll(members, 'SIGKILL')
  for (const deadline = Date.now() + 1000; Date.now() < deadline; ) {
    await sleep(pollMs)
    members = await sessionProcesses(sid)
    if (members.length === 0) return
    signalAll(members, 'SIGKILL')
  }
}
