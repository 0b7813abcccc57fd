import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { freePort } from '@hostd/sdk/testing'

export interface Smbd {
  port: number
  conf: string
  shares: string
  process: ChildProcess
  /** Runs smbclient against this smbd; never throws: answers exit code and output. */
  client(args: string[]): Promise<{ code: number; out: string }>
  stop(): Promise<void>
}

/**
 * A real smbd (Samba 4.17) on loopback with a private configuration under `dir` (recipe in
 * shared/design/test-components.md). Its [global] ends with `include = <dir>/shares.conf`, the file the helper owns.
 */
export async function startSmbd(dir: string): Promise<Smbd> {
  const port = await freePort()
  for (const sub of ['private', 'lock', 'pid', 'state', 'cache', 'ncalrpc'])
    await mkdir(join(dir, sub), { recursive: true })
  const conf = join(dir, 'smb.conf')
  const shares = join(dir, 'shares.conf')
  await writeFile(shares, '')
  await writeFile(
    conf,
    [
      '[global]',
      `smb ports = ${port}`,
      'interfaces = lo',
      'bind interfaces only = yes',
      'disable netbios = yes',
      `private dir = ${dir}/private`,
      `lock directory = ${dir}/lock`,
      `pid directory = ${dir}/pid`,
      `state directory = ${dir}/state`,
      `cache directory = ${dir}/cache`,
      `ncalrpc dir = ${dir}/ncalrpc`,
      `log file = ${dir}/smbd.log`,
      'map to guest = Bad User',
      'load printers = no',
      'printcap name = /dev/null',
      'disable spoolss = yes',
      `include = ${shares}`, // last line of [global]: an included [share] would swallow global lines after it
      '',
    ].join('\n'),
  )
  // Its own process group: smbd signals its whole group when it shuts down.
  const child = spawn('smbd', ['--foreground', '--no-process-group', '--debug-stdout', '-s', conf], {
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  })
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += String(d)))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const client = (args: string[]) =>
    new Promise<{ code: number; out: string }>((resolve) => {
      execFile('smbclient', ['-p', String(port), '-N', ...args], { timeout: 20_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: `${stdout}${stderr}` }),
      )
    })
  // Ready when it answers a share listing.
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error(`smbd exited at start: ${stderr}`)
    if ((await client(['-L', '//127.0.0.1'])).code === 0) break
    if (attempt > 100) throw new Error('smbd did not start')
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    port,
    conf,
    shares,
    process: child,
    client,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM')
        await exited
      }
      // smbd starts samba-dcerpcd on demand (share listings), which detaches from it and outlives it.
      for (const pid of await pidsRunningWith(conf)) {
        try {
          process.kill(pid, 'SIGTERM')
        } catch {
          /* already gone */
        }
      }
    },
  }
}

/** Processes whose command line mentions `text` (here: this smbd's private configuration file). */
async function pidsRunningWith(text: string): Promise<number[]> {
  const pids: number[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')
    if (cmdline.includes(text)) pids.push(Number(entry))
  }
  return pids
}
