import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { UnixHelperClient } from '../../kernel/src/helper-client.ts'
import { HELPER_PROGRAM, startHelper, type RunningHelper } from './start-helper.ts'

/**
 * The root helper, run for real (python3 helper/hostd-helper.py) on its own socket: socket ownership, peer
 * credentials, the allowlist, validation of every string argument of every action against injection strings
 * (proved by the helper's own log and a canary file that a shell would have created), dry run, and the log.
 */
const table = JSON.parse(
  execFileSync('/usr/bin/python3', [HELPER_PROGRAM, '--describe'], { encoding: 'utf8' }),
) as Record<string, { reads: boolean; args: Record<string, string> }>
const NOBODY = 65534

/** A valid value per argument, so that each case breaks exactly one argument. */
const VALID: Record<string, unknown> = {
  service: 'Wired connection 1',
  servers: ['192.0.2.53'],
  address: '192.0.2.10/24',
  gateway: '192.0.2.1',
  seconds: 1,
  checkpoint: '/org/freedesktop/NetworkManager/Checkpoint/1',
  display: ':0',
  on: true,
  name: 'host-1',
  zone: 'UTC',
  pid: 4194304,
  signal: 'TERM',
  // backups.restic-backup (the password file is made in beforeAll: it must exist, owned by the daemon's user)
  repository: '/srv/hostd-backups',
  passwordFile: '/tmp/hostd-helper-test-restic-password',
  cacheDir: '/var/cache/hostd-backups',
  paths: ['/srv'],
  excludes: ['/srv/cache'],
  tags: ['hostd'],
  awsAccessKeyId: 'AKIDEXAMPLE',
  awsSecretAccessKey: 'secret',
  awsRegion: 'us-east-1',
}
function validArgs(action: string): Record<string, unknown> {
  return Object.fromEntries(Object.keys(table[action]!.args).map((field) => [field, VALID[field]]))
}

describe('root helper', () => {
  let helper: RunningHelper
  const canary = () => join(helper.dir, 'canary')
  beforeAll(async () => {
    // The daemon's user is this test's uid; the socket's group is nobody's, so a nobody client can open the file
    // and the peer check alone must refuse it.
    helper = await startHelper({ gid: NOBODY })
    writeFileSync(VALID.passwordFile as string, 'password', { mode: 0o600 })
  })
  afterAll(() => helper.stop())

  it('has a socket only the daemon user and group may open', () => {
    const st = statSync(helper.socket)
    expect(st.isSocket()).toBe(true)
    expect(st.mode & 0o777).toBe(0o660)
    expect([st.uid, st.gid]).toEqual([process.getuid!(), NOBODY])
  })

  /** Connects as another uid/gid (python3 as the client) and prints the answer line or the connect error. */
  function connectAs(uid: number, gid: number): string {
    const client = `import socket,sys
s=socket.socket(socket.AF_UNIX)
try: s.connect(sys.argv[1])
except OSError as e: print('CONNECT', e.errno); sys.exit()
# A refused peer is answered before its request is read, so the send may meet a closed socket: read the answer anyway.
try: s.sendall(b'{"action":"ping"}\\n')
except BrokenPipeError: pass
print(s.makefile().readline().strip())`
    const out = spawnSync('/usr/bin/python3', ['-c', client, helper.socket], { uid, gid, cwd: '/', encoding: 'utf8' })
    if (out.stderr) throw new Error(out.stderr)
    return out.stdout.trim()
  }

  it('refuses a peer whose uid is not the daemon, even when the socket file lets it in, and logs it', async () => {
    const answer = JSON.parse(connectAs(NOBODY, NOBODY))
    expect(answer).toMatchObject({ ok: false, error: 'HOSTD_HELPER_PEER_REFUSED', status: 403 })
    const logged = (await helper.log()).find((e) => e.peer.uid === NOBODY)
    expect(logged).toMatchObject({ outcome: 'refused', status: 403 })
  })

  it('keeps out a uid in neither the owner nor the group at the file level', () => {
    expect(connectAs(NOBODY, NOBODY - 1)).toBe('CONNECT 13') // EACCES
  })

  it('answers ping to the daemon user', async () => {
    expect(await helper.call('ping')).toEqual({ ok: true, result: { pong: true, dryRun: false } })
  })

  it('lists the actions the plugins and the metrics contract rely on', () => {
    expect(table['net.processTraffic']).toEqual({ reads: true, args: { seconds: 'integer' } })
    for (const name of [
      'nm.setDns',
      'nm.setIpv4Manual',
      'power.restart',
      'hostname.set',
      'timezone.set',
      'ssh.set',
      'ntp.set',
    ]) {
      expect(table, name).toHaveProperty([name])
    }
  })

  const INJECTIONS = ['0;id', '$(id)', '`id`', 'a|id', 'a\nid', '-oProxyCommand=id', 'a\0id', 'a&&id', 'a>x']
  const stringFields = Object.entries(table).flatMap(([action, def]) =>
    Object.entries(def.args)
      .filter(([, kind]) => kind.includes('string'))
      .map(([field, kind]) => ({ action, field, list: kind.startsWith('list') })),
  )

  it('has string arguments to attack', () => {
    expect(stringFields.length).toBeGreaterThanOrEqual(8)
  })

  it.each(stringFields)(
    'refuses every injection string in $action.$field with 400, and runs nothing',
    async ({ action, field, list }) => {
      const attempts = [...INJECTIONS, `a;touch ${canary()}`, `$(touch ${canary()})`]
      for (const bad of attempts) {
        const answer = await helper.call(action, { ...validArgs(action), [field]: list ? [bad] : bad })
        expect(answer, `${action} ${field}=${JSON.stringify(bad)}`).toMatchObject({
          ok: false,
          status: 400,
          error: 'HOSTD_HELPER_INVALID_ARGUMENT',
        })
      }
      const entries = (await helper.log()).filter(
        (e) => e.action === action && attempts.includes(list ? e.args?.[field]?.[0] : e.args?.[field]),
      )
      expect(entries).toHaveLength(attempts.length)
      for (const entry of entries) {
        // An argument vector is built only after every argument passed; no argv and no exit code: nothing ran.
        expect(entry).toMatchObject({ outcome: 'refused', status: 400 })
        expect(entry).not.toHaveProperty('argv')
        expect(entry).not.toHaveProperty('exitCode')
      }
      expect(existsSync(canary())).toBe(false)
    },
  )

  it('refuses out-of-range and mistyped numbers and booleans', async () => {
    for (const seconds of [0, 11, -1, 1.5, '3', true, null]) {
      expect(await helper.call('net.processTraffic', { seconds }), String(seconds)).toMatchObject({
        ok: false,
        status: 400,
      })
    }
    for (const on of ['true', 1, null])
      expect(await helper.call('ssh.set', { on }), String(on)).toMatchObject({ ok: false, status: 400 })
    for (const address of ['192.0.2.10/33', '256.0.0.1/24', '192.0.2.10', '192.0.2.010/24']) {
      expect(await helper.call('nm.setIpv4Manual', { service: 'x', address }), address).toMatchObject({
        ok: false,
        status: 400,
      })
    }
    expect(await helper.call('timezone.set', { zone: 'Mars/Olympus_Mons' })).toMatchObject({ ok: false, status: 400 })
    expect(
      await helper.call('nm.setDns', { service: 'x', servers: ['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4'] }),
    ).toMatchObject({ ok: false, status: 400 })
  })

  it('refuses unknown actions, unknown or missing arguments, and malformed requests', async () => {
    expect(await helper.call('rm', { path: '/' })).toMatchObject({
      ok: false,
      status: 400,
      error: 'HOSTD_HELPER_UNKNOWN_ACTION',
    })
    expect(await helper.call('hostname.set', { name: 'a', extra: 1 })).toMatchObject({ ok: false, status: 400 })
    expect(await helper.call('hostname.set', {})).toMatchObject({ ok: false, status: 400 })
    expect(await helper.request({ action: 'hostname.set', args: ['a'] })).toMatchObject({ ok: false, status: 400 })
    expect(await helper.request('not json\n')).toMatchObject({ ok: false, status: 400 })
    expect(await helper.request(`${JSON.stringify({ action: 'ping', pad: 'x'.repeat(70_000) })}\n`)).toMatchObject({
      ok: false,
      status: 400,
    })
  })

  it('runs a read action for real: per-process traffic for the metrics plugin', async () => {
    const answer = await helper.call('net.processTraffic', { seconds: 1 })
    expect(answer.ok, JSON.stringify(answer)).toBe(true)
    expect(typeof answer.result.stdout).toBe('string')
    const entry = (await helper.log()).findLast((e) => e.action === 'net.processTraffic' && e.args.seconds === 1)
    expect(entry).toMatchObject({
      outcome: 'ok',
      exitCode: 0,
      argv: ['nethogs', '-a', '-t', '-d', '1', '-c', '1'],
      peer: { uid: process.getuid!() },
    })
  })
})

describe('root helper: running a program', () => {
  /** Calls the helper's own run() (argument vector, timeout, output cap) on `yes`, which writes without end. */
  it('caps the output it keeps and kills a program that outlives its timeout', () => {
    const script = `import importlib.util, json, sys
spec = importlib.util.spec_from_file_location('helper', sys.argv[1]); helper = importlib.util.module_from_spec(spec); spec.loader.exec_module(helper)
code, out, err = helper.run(['yes', 'hostd'], 1, 1000, {'PATH': helper.SAFE_PATH})
print(json.dumps({'code': code, 'kept': len(out), 'sample': out[:12]}))`
    const out = JSON.parse(execFileSync('/usr/bin/python3', ['-c', script, HELPER_PROGRAM], { encoding: 'utf8' }))
    expect(out).toEqual({ code: null, kept: 1000, sample: 'hostd\nhostd\n' })
  })

  it('keeps its log readable by root only', async () => {
    const helper = await startHelper()
    try {
      await helper.call('hostname.set', { name: '$(id)' })
      expect(statSync(helper.logFile).mode & 0o777).toBe(0o600)
    } finally {
      await helper.stop()
    }
  })
})

describe('root helper in dry-run mode', () => {
  let helper: RunningHelper
  beforeAll(async () => {
    helper = await startHelper({ dryRun: true })
  })
  afterAll(() => helper.stop())

  it.each([
    ['power.restart', {}, ['systemctl', 'reboot']],
    ['power.shutdown', {}, ['systemctl', 'poweroff']],
    ['power.sleep', {}, ['systemctl', 'suspend']],
    ['hostname.set', { name: 'box.example' }, ['hostnamectl', 'set-hostname', 'box.example']],
    ['ssh.set', { on: false }, ['systemctl', 'disable', '--now', 'ssh.service']],
    [
      'nm.setIpv4Manual',
      { service: 'Wired connection 1', address: '192.0.2.10/24', gateway: '192.0.2.1' },
      [
        'nmcli',
        '--terse',
        '--escape',
        'yes',
        'connection',
        'modify',
        'id',
        'Wired connection 1',
        'ipv4.method',
        'manual',
        'ipv4.addresses',
        '192.0.2.10/24',
        'ipv4.gateway',
        '192.0.2.1',
      ],
    ],
  ])('answers the argument vector of %s without running it', async (action, args, argv) => {
    expect(await helper.call(action, args)).toEqual({ ok: true, result: { dryRun: true, argv } })
    expect((await helper.log()).findLast((e) => e.action === action)).toMatchObject({ outcome: 'dry-run', argv })
    expect((await helper.log()).findLast((e) => e.action === action)).not.toHaveProperty('exitCode')
  })
})

describe("the kernel's helper client", () => {
  it('is unavailable without a helper, available with one, and unavailable again once it stops', async () => {
    const helper = await startHelper()
    const client = new UnixHelperClient(helper.socket)
    expect(await client.available()).toBe(true)
    await helper.stop()
    await new Promise((r) => setTimeout(r, 1100)) // past the client's 1 s probe cache
    expect(await client.available()).toBe(false)
    await expect(client.call('ping')).rejects.toMatchObject({ statusCode: 423 })
  })

  it('counts a helper that refuses its uid as unavailable', async () => {
    const helper = await startHelper({ uid: NOBODY })
    try {
      expect(await new UnixHelperClient(helper.socket).available()).toBe(false)
    } finally {
      await helper.stop()
    }
  })

  it('passes a refusal through with its status and code', async () => {
    const helper = await startHelper()
    try {
      await expect(new UnixHelperClient(helper.socket).call('hostname.set', { name: '$(id)' })).rejects.toMatchObject({
        statusCode: 400,
        code: 'HOSTD_HELPER_INVALID_ARGUMENT',
      })
    } finally {
      await helper.stop()
    }
  })
})
