/**
 * Real backup targets for the tests: a private sshd on loopback (its own config, host key and authorized_keys,
 * `internal-sftp`), restic's REST protocol served by `rclone serve restic`, and S3 (moto, a stand-in). Each lives in a temporary folder
 * and is stopped by its PID.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { eventually, freePort } from '@hostd/sdk/testing'

const run = promisify(execFile)

export interface Server {
  dir: string
  port: number
  stop(): Promise<void>
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1')
    s.once('connect', () => {
      s.destroy()
      resolve(true)
    })
    s.once('error', () => resolve(false))
  })
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()))
  child.kill('SIGTERM')
  await closed
}

/** sshd on 127.0.0.1:<port>, accepting the given public key for root (the tests run as root). */
export async function startSshd(authorizedKey: string): Promise<Server & { authorizedKeys: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'hostd-sshd-'))
  const port = await freePort()
  const hostKey = join(dir, 'host_ed25519')
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', hostKey])
  const authorizedKeys = join(dir, 'authorized_keys')
  await writeFile(authorizedKeys, `${authorizedKey}\n`, { mode: 0o600 })
  const config = join(dir, 'sshd_config')
  await writeFile(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKey}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${authorizedKeys}`,
      'PermitRootLogin prohibit-password',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'StrictModes no',
      'Subsystem sftp internal-sftp',
      'LogLevel ERROR',
      '',
    ].join('\n'),
  )
  // sshd's privilege separation folder (made by the package's service, which the tests do not start).
  await mkdir('/run/sshd', { recursive: true, mode: 0o755 })
  const child = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)))
  await eventually(async () => {
    if (child.exitCode !== null) throw new Error(`sshd exited: ${stderr}`)
    return portOpen(port)
  })
  return {
    dir,
    port,
    authorizedKeys,
    stop: async () => {
      await stopChild(child)
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/** `rclone serve restic` on 127.0.0.1:<port>, serving `<dir>/data`, with a user and password when given. */
export async function startRestServer(auth?: { user: string; pass: string }): Promise<Server & { url: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'hostd-rest-'))
  const port = await freePort()
  await mkdir(join(dir, 'data'))
  const child = spawn(
    'rclone',
    [
      'serve',
      'restic',
      '--addr',
      `127.0.0.1:${port}`,
      ...(auth ? ['--user', auth.user, '--pass', auth.pass] : []),
      '--config',
      join(dir, 'rclone.conf'),
      join(dir, 'data'),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let stderr = ''
  child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)))
  await eventually(async () => {
    if (child.exitCode !== null) throw new Error(`rclone exited: ${stderr}`)
    return portOpen(port)
  })
  return {
    dir,
    port,
    url: `http://127.0.0.1:${port}/`,
    stop: async () => {
      await stopChild(child)
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/**
 * An S3-compatible server on 127.0.0.1:<port>: moto's `moto_server` (Python; preinstalled with pip on this machine
 * kind, see /work/.library/env). It is a STAND-IN: an emulator of AWS S3 (buckets and objects in memory, any access key
 * accepted), not a production S3 server; MinIO and Garage are in neither Debian 12 nor npm. restic's s3 backend talks
 * to it over the real S3 HTTP protocol (signed requests, ListObjectsV2, multipart).
 */
export async function startS3Server(): Promise<Server & { endpoint: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'hostd-s3-'))
  const port = await freePort()
  const child = spawn('moto_server', ['-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)))
  child.on('error', (err) => (stderr += String(err)))
  await eventually(async () => {
    if (child.exitCode !== null) throw new Error(`moto_server exited: ${stderr}`)
    return portOpen(port)
  })
  return {
    dir,
    port,
    endpoint: `http://127.0.0.1:${port}`,
    stop: async () => {
      await stopChild(child)
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/** The PIDs of `restic` processes this test process started (its children). */
export async function resticChildren(): Promise<number[]> {
  const pids: number[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const stat = await readFile(join('/proc', entry, 'stat'), 'utf8').catch(() => '')
    const m = /^\d+ \((.*)\) \S+ (\d+)/.exec(stat)
    if (m && m[1] === 'restic' && Number(m[2]) === process.pid) pids.push(Number(entry))
  }
  return pids
}
