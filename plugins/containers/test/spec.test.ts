/** The RunSpec's parsing and the role rules as pure functions (the same ones the routes use). */
import { describe, expect, it } from 'vitest'
import { mkdtemp, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { normalizeSpec, parsePort, shellSplit } from '../src/runspec.ts'
import { requiredRole, resolveHostPath } from '../src/policy.ts'
import { createOptions } from '../src/create.ts'
import { findDuplicateKey } from '@hostd/sdk'
import { HIGH_WATER, LogDemuxer, LogPump, MAX_CHUNK, type LogSink } from '../src/logs.ts'
import { PassThrough } from 'node:stream'
import { defaultSockets, lowerVersion, parseDockerHost } from '../src/engine.ts'

describe('RunSpec parsing', () => {
  it('splits a command like a shell, without expansion', () => {
    expect(shellSplit(`sh -c 'echo "$HOME" && ls *' "a b" c\\ d e\\"f ''`)).toEqual(['sh', '-c', 'echo "$HOME" && ls *', 'a b', 'c d', 'e"f', ''])
    expect(shellSplit('  one\ttwo\n three ')).toEqual(['one', 'two', 'three'])
    expect(shellSplit('"$(rm -rf /)" `x`')).toEqual(['$(rm -rf /)', '`x`'])
    expect(() => shellSplit('echo "open')).toThrow(/unterminated/)
  })

  it('parses docker-style ports', () => {
    expect(parsePort('8080')).toEqual({ hostAddress: '', hostPort: 0, containerPort: 8080, proto: 'tcp' })
    expect(parsePort('80:8080/udp')).toEqual({ hostAddress: '', hostPort: 80, containerPort: 8080, proto: 'udp' })
    expect(parsePort('127.0.0.1::80')).toEqual({ hostAddress: '127.0.0.1', hostPort: 0, containerPort: 80, proto: 'tcp' })
    expect(parsePort('[::1]:81:80')).toEqual({ hostAddress: '::1', hostPort: 81, containerPort: 80, proto: 'tcp' })
    for (const bad of ['99999:80', '80:0', 'x:80', '1.2.3:80:80', '80/icmp']) expect(() => parsePort(bad), bad).toThrow()
  })

  it('turns allowlisted extraArgs into the same spec, and refuses anything else', () => {
    const spec = normalizeSpec({ image: 'x', extraArgs: '-e A=1 --env=B=2 -p 8080:80 --restart unless-stopped --label k=v -m 128m --cap-add NET_ADMIN --read-only --tmpfs /run:size=1m' })
    expect(spec).toMatchObject({
      env: ['A=1', 'B=2'], restartPolicy: 'unless-stopped', labels: { k: 'v' }, memory: 128 * 1024 * 1024, capAdd: ['NET_ADMIN'], readOnly: true,
      tmpfs: { '/run': 'size=1m' }, hadExtraArgs: true, ports: [{ hostPort: 8080, containerPort: 80 }],
    })
    for (const bad of ['--rm', '--volumes-from x', 'image', '--env', '-d', '--privileged=maybe -x']) {
      expect(() => normalizeSpec({ image: 'x', extraArgs: bad }), bad).toThrow()
    }
  })

  it('maps to Engine API options', () => {
    const opts = createOptions(normalizeSpec({ image: 'img', name: 'n', command: ['a', 'b'], cpus: 1.5, memory: 1048576 * 8, ports: [{ containerPort: 80, hostPort: 8080, hostAddress: '127.0.0.1' }], volumes: ['v:/data:ro'], network: 'mynet', dns: ['9.9.9.9'] }))
    expect(opts).toMatchObject({
      name: 'n', Image: 'img', Cmd: ['a', 'b'], ExposedPorts: { '80/tcp': {} },
      HostConfig: { NanoCpus: 1.5e9, Memory: 8388608, PortBindings: { '80/tcp': [{ HostIp: '127.0.0.1', HostPort: '8080' }] }, Binds: ['v:/data:ro'], NetworkMode: 'mynet', Dns: ['9.9.9.9'] },
    })
  })
})

describe('role rules', () => {
  const role = async (extra: object) => (await requiredRole(normalizeSpec({ image: 'x', ...extra }))).role

  it('is operator for plain specs and admin for every host-reaching field', async () => {
    expect(await role({ volumes: ['data:/d'], capAdd: ['chown', 'CAP_KILL'], network: 'bridge' })).toBe('operator')
    for (const extra of [{ volumes: ['/srv:/d'] }, { mounts: [{ type: 'tmpfs', target: '/t' }] }, { devices: ['/dev/fuse'] }, { extraArgs: ['--init'] }, { capAdd: ['SYS_ADMIN'] }, { capAdd: ['ALL'] }, { network: 'host' }]) {
      expect(await role(extra), JSON.stringify(extra)).toBe('admin')
    }
  })

  it('resolves host paths lexically and through symlinks', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hostd-ctr-policy-'))
    await symlink('/', join(dir, 'up'))
    await symlink(join(dir, 'up'), join(dir, 'up2'))
    for (const p of ['/', '//', '/.', '/etc/..', '/./etc/../', join(dir, 'up'), join(dir, 'up2'), `${join(dir, 'up')}/tmp/..`]) {
      expect(await resolveHostPath(p), p).toBe('/')
    }
    expect(await resolveHostPath(join(dir, 'up', 'etc'))).toBe('/etc')
    expect(await resolveHostPath('/no/such/dir/..')).toBe('/no/such')
    await rm(dir, { recursive: true })
  })

  it('refuses host namespaces on Docker Desktop for every role', async () => {
    await expect(requiredRole(normalizeSpec({ image: 'x', network: 'host' }), { desktop: true })).rejects.toMatchObject({ code: 'HOSTD_CONTAINERS_HOST_NAMESPACE_REFUSED', statusCode: 403 })
    expect((await requiredRole(normalizeSpec({ image: 'x', network: 'host' }), { desktop: false })).role).toBe('admin')
  })
})

describe('small parts', () => {
  it('finds duplicate JSON keys', () => {
    expect(findDuplicateKey('{"image":"a","image":"b"}')).toBe('image')
    expect(findDuplicateKey('{"a":{"x":1},"b":{"x":2}}')).toBeNull()
  })

  it('demultiplexes the engine log stream in bounded chunks, across any split', () => {
    const frame = (stream: number, text: string) => {
      const body = Buffer.from(text)
      const head = Buffer.alloc(8)
      head[0] = stream
      head.writeUInt32BE(body.length, 4)
      return Buffer.concat([head, body])
    }
    const big = 'x'.repeat(MAX_CHUNK * 2 + 5)
    const wire = Buffer.concat([frame(1, 'out\n'), frame(2, 'err\n'), frame(1, big)])
    const got: { stream: string; text: string }[] = []
    const demux = new LogDemuxer(false, (c) => got.push({ stream: c.stream, text: c.data.toString() }))
    for (let i = 0; i < wire.length; i += 3) demux.push(wire.subarray(i, i + 3))
    expect(got.filter((c) => c.stream === 'stderr').map((c) => c.text).join('')).toBe('err\n')
    expect(got.filter((c) => c.stream === 'stdout').map((c) => c.text).join('')).toBe(`out\n${big}`)
    expect(Math.max(...got.map((c) => c.text.length))).toBeLessThanOrEqual(MAX_CHUNK)
  })

  it('pauses the engine stream while the socket is backed up, and resumes once it drains', async () => {
    // The sink stands in for a client that does not read: sent bytes stay queued until the test flushes them.
    const queued: { bytes: number; cb: () => void }[] = []
    const sink: LogSink = {
      get bufferedAmount() {
        return queued.reduce((a, q) => a + q.bytes, 0)
      },
      send: (data, cb) => void queued.push({ bytes: Buffer.byteLength(data), cb: () => cb() }),
      isOpen: () => true,
    }
    const source = new PassThrough()
    const pump = new LogPump(source, sink, true)
    const line = 'y'.repeat(1023) + '\n'
    let written = 0
    // Write until the source pushes back (write() false): that only happens once the pump stopped reading.
    while (source.write(line)) {
      written += line.length
      await new Promise((r) => setImmediate(r))
      if (written > 64 * HIGH_WATER) break
    }
    expect(pump.paused).toBe(true)
    expect(source.isPaused()).toBe(true)
    expect(sink.bufferedAmount).toBeGreaterThan(HIGH_WATER)
    expect(sink.bufferedAmount).toBeLessThan(HIGH_WATER + MAX_CHUNK * 2)
    // The client catches up: callbacks fire, the stream resumes.
    while (queued.length) queued.shift()!.cb()
    expect(pump.paused).toBe(false)
    expect(source.isPaused()).toBe(false)
    expect(pump.pauses).toBe(1)
  })

  it('looks for Docker and Podman sockets, or what DOCKER_HOST names', () => {
    expect(defaultSockets({ XDG_RUNTIME_DIR: '/run/user/1000' }, 1000)).toEqual([
      '/var/run/docker.sock', '/run/docker.sock', '/run/user/1000/docker.sock', '/run/podman/podman.sock', '/run/user/1000/podman/podman.sock',
    ])
    expect(parseDockerHost('unix:///tmp/d.sock')).toMatchObject({ socketPath: '/tmp/d.sock' })
    expect(parseDockerHost('tcp://10.0.0.5:2375')).toMatchObject({ host: '10.0.0.5', port: 2375 })
    expect(() => parseDockerHost('ssh://me@host')).toThrow(/unix:\/\/ and tcp:\/\//)
  })

  it('negotiates the lower API version', () => {
    expect(lowerVersion('1.41', '1.45')).toBe('1.41')
    expect(lowerVersion('1.47', '1.45')).toBe('1.45')
    expect(lowerVersion('1.9', '1.45')).toBe('1.9')
  })
})
