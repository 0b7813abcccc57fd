import { readdir, readFile, readlink } from 'node:fs/promises'

/** A small file's text, or null when it is missing or unreadable (facts the host does not expose are null). */
export async function readText(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8')
  } catch {
    return null
  }
}

export async function readLink(path: string): Promise<string | null> {
  try {
    return await readlink(path)
  } catch {
    return null
  }
}

/** KEY=value lines (os-release, ufw.conf); quotes removed. */
export function parseKeyValues(text: string | null): Record<string, string> {
  const out: Record<string, string> = {}
  for (const line of (text ?? '').split('\n')) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line)
    if (m) out[m[1]!] = m[2]!.replace(/^(["'])(.*)\1$/, '$2')
  }
  return out
}

/** Names (comm) of running processes, read from /proc; processes we may not read are skipped. */
export async function processNames(): Promise<Set<string>> {
  const names = new Set<string>()
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name))
  await Promise.all(
    pids.map(async (pid) => {
      const comm = await readText(`/proc/${pid}/comm`)
      if (comm) names.add(comm.trim())
    }),
  )
  return names
}
