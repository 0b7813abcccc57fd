/**
 * Settings the daemon applies to itself at start, so nobody has to remember them (why and what each buys:
 * docs/ARCHITECTURE.md, "Memory"). Two of them only take effect when present as the process starts: the allocator's
 * variable (glibc reads it once, at its first allocation) and V8's heap flags. When one is missing, the daemon replaces
 * itself with the same command plus what is missing (`process.execve`: same pid, same stdin/stdout/stderr, nothing
 * run twice, since this happens before any other module loads). A value the user gave (in the environment, in
 * NODE_OPTIONS or as a node flag) is kept as given.
 */

/**
 * glibc: allocations over 128 KiB get their own mapping, returned to the system when freed; and two arenas, not one
 * per thread that ever allocated (the libuv pool's, V8's helpers), each of which keeps pages of its own.
 */
export const ALLOCATOR_ENV = { MALLOC_MMAP_THRESHOLD_: '131072', MALLOC_ARENA_MAX: '2' } as const

/**
 * V8: a young generation of at most 2 MiB per semi-space. The default grows to 16 MiB and stays grown while idle.
 * No allocation-site pretenuring: V8 saw Node's request objects outlive the slow requests of the first sign-ins and
 * allocated them in the old generation for good, which made every scavenge under load four times longer (and made
 * 2 MiB semi-spaces promote too much, until it was off). Measured: docs/decisions/measurements.md, "Memory".
 */
export const NODE_FLAGS = ['--max-semi-space-size=2', '--no-allocation-site-pretenuring'] as const

/** `--max-semi-space-size=8` -> `--max-semi-space-size`; `--no-x` and `--x` are one flag (a user's choice either way). */
const flagName = (flag: string) => flag.split('=')[0]!.replace(/^--no-/, '--')

/** What a restart must add: allocator variables absent from `env`, node flags given neither as flags nor in NODE_OPTIONS. */
export function missingSettings(
  env: NodeJS.ProcessEnv,
  execArgv: readonly string[],
): { env: Record<string, string>; flags: string[] } {
  const given = new Set([...execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/)].map(flagName))
  return {
    env: Object.fromEntries(Object.entries(ALLOCATOR_ENV).filter(([name]) => env[name] === undefined)),
    flags: NODE_FLAGS.filter((flag) => !given.has(flagName(flag))),
  }
}

/**
 * Restarts the process in place with the missing settings (Linux only: the allocator variable is glibc's, and
 * `process.execve` is POSIX). Returns when nothing is missing, or when the restart is not possible; then the daemon
 * runs without them and says so once.
 */
export function applyRuntimeSettings(): void {
  if (process.platform !== 'linux') return
  const missing = missingSettings(process.env, process.execArgv)
  if (Object.keys(missing.env).length === 0 && missing.flags.length === 0) {
    // Applied: children (shells, helpers, scripts) get the environment they would have had without hostd.
    for (const name of Object.keys(ALLOCATOR_ENV)) delete process.env[name]
    return
  }
  if (typeof process.execve !== 'function') {
    process.stderr.write(
      'hostd: process.execve is missing: running without the memory settings (docs/ARCHITECTURE.md, "Memory")\n',
    )
    return
  }
  try {
    process.execve(
      process.execPath,
      [process.execPath, ...missing.flags, ...process.execArgv, ...process.argv.slice(1)],
      { ...process.env, ...missing.env },
    )
  } catch (err) {
    process.stderr.write(
      `hostd: could not restart with the memory settings (${(err as Error).message}): running without them\n`,
    )
  }
}
