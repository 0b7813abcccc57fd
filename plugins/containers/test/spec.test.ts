/** The RunSpec's parsing and the role rules as pure functions (the same ones the routes use). */
import { describe, expect, it } from 'vitest'
import { mkdtemp, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { normalizeSpec } from '../src/runspec/normalize.ts'
import { shellSplit } from '../src/runspec/shell-words.ts'
import { parsePort } from '../src/runspec/values.ts'
import { requiredRole, resolveHostPath, volumeReachesHost } from '../src/policy.ts'
import { canonicalReference, parseImageReference } from '../src/image-reference.ts'
import { referencesLeft } from '../src/adapters/images.ts'
import { createOptions } from '../src/adapters/create.ts'
import { findDuplicateKey } from '@hostd/sdk'
import { HIGH_WATER, LogDemuxer, LogPump, MAX_CHUNK, type LogSink } from '../src/adapters/logs.ts'
import { PassThrough } from 'node:stream'
import { defaultSockets, lowerVersion, parseDockerHost } from '../src/adapters/engine.ts'

describe('RunSpec parsing', () => {
  it('splits a command like a shell, without expansion', () => {
    expect(shellSplit(`sh -c 'echo "$HOME" && ls *' "a b" c\\ d e\\"f ''`)).toEqual([
      'sh',
      '-c',
      'echo "$HOME" && ls *',
      'a b',
      'c d',
      'e"f',
      '',
    ])
    expect(shellSplit('  one\ttwo\n three ')).toEqual(['one', 'two', 'three'])
    expect(shellSplit('"$(rm -rf /)" `x`')).toEqual(['$(rm -rf /)', '`x`'])
    expect(() => shellSplit('echo "open')).toThrow(/unterminated/)
  })

  it('parses docker-style ports', () => {
    expect(parsePort('8080')).toEqual({ hostAddress: '', hostPort: 0, containerPort: 8080, proto: 'tcp' })
    expect(parsePort('80:8080/udp')).toEqual({ hostAddress: '', hostPort: 80, containerPort: 8080, proto: 'udp' })
    expect(parsePort('127.0.0.1::80')).toEqual({
      hostAddress: '127.0.0.1',
      hostPort: 0,
      containerPort: 80,
      proto: 'tcp',
    })
    expect(parsePort('[::1]:81:80')).toEqual({ hostAddress: '::1', hostPort: 81, containerPort: 80, proto: 'tcp' })
    for (const bad of ['99999:80', '80:0', 'x:80', '1.2.3:80:80', '80/icmp'])
      expect(() => parsePort(bad), bad).toThrow()
  })

  it('turns allowlisted extraArgs into the same spec, and refuses anything else', () => {
    const spec = normalizeSpec({
      image: 'x',
      extraArgs:
        '-e A=1 --env=B=2 -p 8080:80 --restart unless-stopped --label k=v -m 128m --cap-add NET_ADMIN --read-only --tmpfs /run:size=1m',
    })
    expect(spec).toMatchObject({
      env: ['A=1', 'B=2'],
      restartPolicy: 'unless-stopped',
      labels: { k: 'v' },
      memory: 128 * 1024 * 1024,
      capAdd: ['NET_ADMIN'],
      readOnly: true,
      tmpfs: { '/run': 'size=1m' },
      hadExtraArgs: true,
      ports: [{ hostPort: 8080, containerPort: 80 }],
    })
    for (const bad of ['--rm', '--volumes-from x', 'image', '--env', '-d', '--privileged=maybe -x']) {
      expect(() => normalizeSpec({ image: 'x', extraArgs: bad }), bad).toThrow()
    }
  })

  it('translates every extraArgs flag exactly as docker run reads it, or refuses it', () => {
    const spec = normalizeSpec({
      image: 'x',
      extraArgs: [
        '--entrypoint',
        '/bin/my tool',
        '--device',
        '/dev/fuse:rw',
        '--device=/dev/null:/dev/nil:r',
        '--add-host',
        'db:10.0.0.2',
        '--add-host=gw:host-gateway',
        '--cpus',
        '0.5',
        '--mount',
        'type=bind,src=/srv,dst=/srv,ro',
        '-v',
        'data:/d:ro,z',
      ],
    })
    expect(spec.entrypoint).toEqual(['/bin/my tool'])
    expect(spec.devices).toEqual([
      { host: '/dev/fuse', container: '/dev/fuse', permissions: 'rw' },
      { host: '/dev/null', container: '/dev/nil', permissions: 'r' },
    ])
    expect(spec.extraHosts).toEqual(['db:10.0.0.2', 'gw:host-gateway'])
    expect(spec.mounts).toEqual([{ type: 'bind', source: '/srv', target: '/srv', readOnly: true }])
    expect(createOptions(spec).HostConfig?.Binds).toEqual(['data:/d:ro,z'])
    for (const bad of [
      ['--mount', 'type=volume,src=v,dst=/v,volume-opt=o=bind'],
      ['--mount', 'type=volume,src=v,dst=/v,volume-nocopy'],
      ['--mount', 'type=bind,src=/a,dst=/b,readonly=yes'],
      ['--mount', 'type=bind,src=/a,src=/c,dst=/b'],
      ['--mount', 'type=bind,source,dst=/b'],
      ['--mount', ' type=bind,src=/a,dst=/b'],
      ['--device', '/dev/a:/dev/b:rwm:x'],
      ['--device', '/dev/a:rwx'],
      ['--device', '/dev/a:relative'],
      ['-e', 'FROM_CLIENT'],
      ['--label', '=v'],
      ['--add-host', 'db'],
      ['--add-host', 'db:not-an-ip'],
      ['--cpus', '0x10'],
      ['--cpus', '1e3'],
      ['-v', 'data:/d:rw,exec'],
    ]) {
      expect(() => normalizeSpec({ image: 'x', extraArgs: bad }), bad.join(' ')).toThrow()
    }
    expect(() => normalizeSpec({ image: 'x', volumes: [{ source: 'data', target: '/d:ro' }] })).toThrow(/":"/)
    expect(() => normalizeSpec({ image: 'x', dns: ['one.one.one.one'] })).toThrow(/IP address/)
  })

  it('maps to Engine API options', () => {
    const opts = createOptions(
      normalizeSpec({
        image: 'img',
        name: 'n',
        command: ['a', 'b'],
        cpus: 1.5,
        memory: 1048576 * 8,
        ports: [{ containerPort: 80, hostPort: 8080, hostAddress: '127.0.0.1' }],
        volumes: ['v:/data:ro'],
        network: 'mynet',
        dns: ['9.9.9.9'],
      }),
    )
    expect(opts).toMatchObject({
      name: 'n',
      Image: 'img',
      Cmd: ['a', 'b'],
      ExposedPorts: { '80/tcp': {} },
      HostConfig: {
        NanoCpus: 1.5e9,
        Memory: 8388608,
        PortBindings: { '80/tcp': [{ HostIp: '127.0.0.1', HostPort: '8080' }] },
        Binds: ['v:/data:ro'],
        NetworkMode: 'mynet',
        Dns: ['9.9.9.9'],
      },
    })
  })
})

describe('role rules', () => {
  const role = async (extra: object) => (await requiredRole(normalizeSpec({ image: 'x', ...extra }))).role

  it('is operator for plain specs and admin for every host-reaching field', async () => {
    expect(await role({ volumes: ['data:/d'], capAdd: ['chown', 'CAP_KILL'], network: 'bridge' })).toBe('operator')
    for (const extra of [
      { volumes: ['/srv:/d'] },
      { mounts: [{ type: 'tmpfs', target: '/t' }] },
      { devices: ['/dev/fuse'] },
      { extraArgs: ['--init'] },
      { capAdd: ['SYS_ADMIN'] },
      { capAdd: ['ALL'] },
      { network: 'host' },
    ]) {
      expect(await role(extra), JSON.stringify(extra)).toBe('admin')
    }
  })

  it('resolves host paths lexically and through symlinks', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hostd-ctr-policy-'))
    await symlink('/', join(dir, 'up'))
    await symlink(join(dir, 'up'), join(dir, 'up2'))
    for (const p of [
      '/',
      '//',
      '/.',
      '/etc/..',
      '/./etc/../',
      join(dir, 'up'),
      join(dir, 'up2'),
      `${join(dir, 'up')}/tmp/..`,
    ]) {
      expect(await resolveHostPath(p), p).toBe('/')
    }
    expect(await resolveHostPath(join(dir, 'up', 'etc'))).toBe('/etc')
    expect(await resolveHostPath('/no/such/dir/..')).toBe('/no/such')
    await rm(dir, { recursive: true })
  })

  it('judges a named volume by its driver and options as the engine has them', async () => {
    const v = (driver: string, options: Record<string, string> = {}) =>
      volumeReachesHost({ name: 'v', driver, options })
    expect(v('local')).toBeNull()
    expect(v('local', { size: '10G' })).toBeNull()
    expect(v('local', { type: 'tmpfs', device: 'tmpfs', o: 'size=64m,mode=1777,uid=1000' })).toBeNull()
    for (const [driver, options] of [
      ['local', { type: 'none', o: 'bind', device: '/srv' }],
      ['local', { o: 'bind', device: '/srv' }],
      ['local', { device: '/dev/sdb1', type: 'ext4' }],
      ['local', { type: 'nfs', o: 'addr=10.0.0.1,rw', device: ':/export' }],
      ['local', { type: 'cifs', o: 'addr=nas,username=u', device: '//nas/share' }],
      ['local', { type: 'tmpfs', device: 'tmpfs', o: 'size=1m,bind' }],
      ['local', { type: 'tmpfs', device: '/srv', o: 'rbind' }],
      ['local', { unknown: 'x' }],
      ['rexray/ebs', {}],
      ['vieux/sshfs', { sshcmd: 'u@h:/' }],
    ] as const) {
      expect(v(driver, options), `${driver} ${JSON.stringify(options)}`).toMatch(
        /^volume v (reaches the host|uses the)/,
      )
    }
    const spec = normalizeSpec({ image: 'x', volumes: ['v:/data', 'other:/o'] })
    expect((await requiredRole(spec)).role).toBe('operator')
    expect(
      (
        await requiredRole(spec, {
          desktop: false,
          volumes: new Map([
            ['v', { name: 'v', driver: 'local', options: {} }],
            ['other', null],
          ]),
        })
      ).role,
    ).toBe('operator')
    const verdict = await requiredRole(spec, {
      desktop: false,
      volumes: new Map([['v', { name: 'v', driver: 'local', options: { type: 'none', o: 'bind', device: '/srv' } }]]),
    })
    expect(verdict).toEqual({
      role: 'admin',
      reasons: ['volume v reaches the host (local driver with type=none, o=bind, device=/srv)'],
    })
  })

  it('treats joining a container that uses the host network as the host network', async () => {
    const spec = normalizeSpec({ image: 'x', network: 'container:vpn' })
    expect((await requiredRole(spec, { desktop: false, networkPeerUsesHost: false })).role).toBe('operator')
    expect(await requiredRole(spec, { desktop: false, networkPeerUsesHost: true })).toEqual({
      role: 'admin',
      reasons: ['network container:vpn joins a container that uses the host network namespace'],
    })
    await expect(requiredRole(spec, { desktop: true, networkPeerUsesHost: true })).rejects.toMatchObject({
      code: 'HOSTD_CONTAINERS_HOST_NAMESPACE_REFUSED',
    })
  })

  it('refuses host namespaces on Docker Desktop for every role', async () => {
    await expect(requiredRole(normalizeSpec({ image: 'x', network: 'host' }), { desktop: true })).rejects.toMatchObject(
      { code: 'HOSTD_CONTAINERS_HOST_NAMESPACE_REFUSED', statusCode: 403 },
    )
    expect((await requiredRole(normalizeSpec({ image: 'x', network: 'host' }), { desktop: false })).role).toBe('admin')
  })
})

describe('image references', () => {
  it('follows the distribution reference grammar', () => {
    for (const ok of [
      'nginx',
      'nginx:1.27',
      'library/nginx:latest',
      'docker.io/library/nginx',
      'ghcr.io/org/app:v1.2.3-rc.1',
      'localhost:5000/a/b/c:tag_1',
      '127.0.0.1:5000/test/app-3aa260:1',
      '[::1]:5000/x',
      'my-registry.example.com/a__b/c--d.e:T',
      `nginx@sha256:${'a'.repeat(64)}`,
      `nginx:1@sha512:${'0'.repeat(128)}`,
      `sha256:${'f'.repeat(64)}`,
      'f'.repeat(64),
      'Registry.Example.com/app',
    ]) {
      expect(() => parseImageReference(ok), ok).not.toThrow()
    }
    for (const [bad, why] of [
      ['', /empty/],
      ['a\u0000b', /NUL/],
      ['a\ud800', /surrogate/],
      ['caf\u00e9', /ASCII/],
      ['a b', /ASCII/],
      ['Nginx', /lowercase/],
      ['app:', /grammar/],
      [':1', /grammar/],
      ['a//b', /grammar/],
      ['a/', /grammar/],
      ['-a', /grammar/],
      ['a_-b', /grammar/],
      ['a:-tag', /grammar/],
      [`a:${'t'.repeat(129)}`, /grammar/],
      [`${'a'.repeat(256)}`, /longer than 255/],
      [`a@sha256:${'A'.repeat(64)}`, /64 lowercase hex/],
      [`a@sha1:${'a'.repeat(40)}`, /not supported/],
      ['host:port/x', /grammar/],
      [`${'a'.repeat(600)}`, /longer than 520/],
    ] as const) {
      expect(() => parseImageReference(bad), JSON.stringify(bad)).toThrow(why)
    }
    expect(parseImageReference('reg:5000/a/b:1')).toEqual({ name: 'reg:5000/a/b', tag: '1', digest: null })
  })

  it('reads references the way the engine stores them, and knows which removal leaves the image without one', () => {
    expect(canonicalReference('nginx')).toBe('docker.io/library/nginx:latest')
    expect(canonicalReference('me/app:1')).toBe('docker.io/me/app:1')
    expect(canonicalReference('index.docker.io/nginx:1')).toBe('docker.io/library/nginx:1')
    expect(canonicalReference('localhost/app')).toBe('localhost/app:latest')
    const digest = `sha256:${'c'.repeat(64)}`
    const image = { RepoTags: ['app:1', 'app:2'], RepoDigests: [`app@${digest}`] }
    expect(referencesLeft('app:1', image)).toEqual(['docker.io/library/app:2', `docker.io/library/app@${digest}`])
    expect(referencesLeft('app:2', { RepoTags: ['app:2'], RepoDigests: [`app@${digest}`] })).toEqual([])
    expect(referencesLeft('app:2', { RepoTags: ['app:2'], RepoDigests: [`other@${digest}`] })).toEqual([
      `docker.io/library/other@${digest}`,
    ])
    expect(referencesLeft('docker.io/library/app:2', { RepoTags: ['app:2', 'b:1'] })).toEqual(['docker.io/library/b:1'])
    expect(referencesLeft(`sha256:${'d'.repeat(64)}`, image)).toBeNull()
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
    expect(
      got
        .filter((c) => c.stream === 'stderr')
        .map((c) => c.text)
        .join(''),
    ).toBe('err\n')
    expect(
      got
        .filter((c) => c.stream === 'stdout')
        .map((c) => c.text)
        .join(''),
    ).toBe(`out\n${big}`)
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
      '/var/run/docker.sock',
      '/run/docker.sock',
      '/run/user/1000/docker.sock',
      '/run/podman/podman.sock',
      '/run/user/1000/podman/podman.sock',
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
