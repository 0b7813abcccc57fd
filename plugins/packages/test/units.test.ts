import { describe, expect, it } from 'vitest'
import { startTestKernel } from '@hostd/sdk/testing'
import { createPackagesPlugin } from '../src/index.ts'
import { DumpavailParser } from '../src/apt.ts'
import { translateApt } from '../src/apt-errors.ts'
import { parseDpkgQuery } from '../src/dpkg.ts'
import { packageNameProblem } from '../src/names.ts'
import { parseStatusLine } from '../src/status-fd.ts'

describe("apt's status lines", () => {
  it.each([
    [
      'dlstatus:1:42.5000:Retrieving file 1 of 3',
      { phase: 'download', package: null, percent: 42.5, text: 'Retrieving file 1 of 3' },
    ],
    ['pmstatus:dpkg-exec:0.0000:Running dpkg', { phase: 'dpkg', package: null, percent: 0, text: 'Running dpkg' }],
    [
      'pmstatus:libc6:amd64:20.0000:Unpacking libc6:amd64 (2.36)',
      { phase: 'install', package: 'libc6:amd64', percent: 20, text: 'Unpacking libc6:amd64 (2.36)' },
    ],
    [
      'pmstatus:foo:40.0000:Preparing to configure foo (amd64)',
      { phase: 'configure', package: 'foo', percent: 40, text: 'Preparing to configure foo (amd64)' },
    ],
    [
      'pmstatus:foo:60.0000:Configuring foo (amd64)',
      { phase: 'configure', package: 'foo', percent: 60, text: 'Configuring foo (amd64)' },
    ],
    [
      'pmstatus:foo:33.3333:Removing foo (amd64)',
      { phase: 'remove', package: 'foo', percent: 33.3, text: 'Removing foo (amd64)' },
    ],
    [
      'pmstatus:foo:66.6667:Completely removed foo (amd64)',
      { phase: 'purge', package: 'foo', percent: 66.7, text: 'Completely removed foo (amd64)' },
    ],
    [
      'pmstatus:man-db:90.0000:Running post-installation trigger man-db (amd64)',
      { phase: 'trigger', package: 'man-db', percent: 90, text: 'Running post-installation trigger man-db (amd64)' },
    ],
    [
      'pmerror:foo:50.0000:installed foo package post-installation script subprocess returned error exit status 1',
      { phase: 'error', package: 'foo', percent: 50 },
    ],
    [
      "pmconffile:/etc/foo.conf:50.0000:'/etc/foo.conf' '/etc/foo.conf.dpkg-new' 1 1",
      { phase: 'conffile', package: null, percent: 50 },
    ],
  ])('%s', (line, expected) => {
    expect(parseStatusLine(line)).toMatchObject({ type: 'progress', ...expected })
  })

  it('leaves what is not progress alone', () => {
    for (const line of [
      'media-change:Debian 12:/dev/sr0:Please insert the disc',
      'pmstatus:no percent here',
      'Reading package lists...',
      '',
    ]) {
      expect(parseStatusLine(line), line).toBeNull()
    }
  })
})

describe('apt-cache dumpavail', () => {
  const records =
    'Package: curl\nVersion: 7.88.1-10+deb12u15\nArchitecture: amd64\nDepends: libc6 (>= 2.34)\n' +
    'Description: command line tool for transferring data with URL syntax\nDescription-md5: f83293d1\n' +
    'Tag: implemented-in::c,\n protocol::ftp\n\n' +
    'Package: libc6\nArchitecture: i386\nVersion: 2.36-9\nDescription: GNU C Library: Shared libraries\n Contains the standard libraries.\n\n' +
    'Package: last\nVersion: 1\nArchitecture: all\nDescription: no blank line at the end'

  it('keeps name, architecture, version and summary of each record, however the stream is cut', () => {
    const expected = [
      ['curl', 'amd64', '7.88.1-10+deb12u15', 'command line tool for transferring data with URL syntax'],
      ['libc6', 'i386', '2.36-9', 'GNU C Library: Shared libraries'],
      ['last', 'all', '1', 'no blank line at the end'],
    ]
    const bytes = Buffer.from(records)
    for (const size of [1, 7, 64, bytes.length]) {
      const got: string[][] = []
      const parser = new DumpavailParser((...fields) => got.push(fields))
      for (let i = 0; i < bytes.length; i += size) parser.push(bytes.subarray(i, i + size))
      parser.end()
      expect(got, `chunks of ${size}`).toEqual(expected)
    }
  })
})

describe('dpkg-query output', () => {
  it('keeps installed packages (and half-done ones), drops removed ones, and sorts by name', () => {
    const out =
      'zsh\tamd64\t5.9-4\tinstalled\t2500\tno\toptional\tno\tshell with lots of features\n' +
      'old\tall\t1.0\tconfig-files\t10\t\t\t\tremoved but configured\n' +
      'broken\tamd64\t2.0\thalf-configured\t\t\t\t\tsummary with\ta tab\n' +
      'dpkg\tamd64\t1.21\tinstalled\t6000\tyes\trequired\t\tDebian package management system\n' +
      'apt\tamd64\t2.6\tinstalled\t4000\tno\trequired\tno\tcommandline package manager\n' +
      'guard\tall\t1\tinstalled\t1\t\textra\tyes\ta protected package\n'
    const parsed = parseDpkgQuery(out)
    expect(parsed.map((p) => p.name)).toEqual(['apt', 'broken', 'dpkg', 'guard', 'zsh'])
    expect(parsed[1]).toEqual({
      name: 'broken',
      architecture: 'amd64',
      version: '2.0',
      state: 'half-configured',
      installedSizeInBytes: 0,
      summary: 'summary with\ta tab',
      essential: false,
    })
    expect(parsed[4]).toEqual({
      name: 'zsh',
      architecture: 'amd64',
      version: '5.9-4',
      state: 'installed',
      installedSizeInBytes: 2_560_000,
      summary: 'shell with lots of features',
      essential: false,
    })
    // Essential: yes, Priority: required and Protected: yes each make a package one hostd does not remove.
    expect(parsed.filter((p) => p.essential).map((p) => p.name)).toEqual(['apt', 'dpkg', 'guard'])
  })
})

describe('package names', () => {
  it('accepts Debian names, with an optional architecture', () => {
    for (const name of ['0ad', 'libstdc++6', 'python3.11', 'libc6:amd64', 'libgtk-3-0:arm64', 'x11-utils'])
      expect(packageNameProblem(name), name).toBeNull()
  })
  it.each([
    ['-oAPT::Update::Pre-Invoke::=/bin/sh', /option/],
    ['foo-', /install or remove/],
    ['g++', /install or remove/],
    ['?essential', /pattern/],
    ['~nfoo', /pattern/],
    ['foo=1.0', /version/],
    ['foo/bookworm', /release/],
    ['./x.deb', /file/],
    ['*', /not a Debian package name/],
    ['Foo', /not a Debian/],
    ['a', /not a Debian/],
    ['foo\nbar', /foo\\nbar/],
    ['x'.repeat(129), /at most 128/],
    ['', /non-empty/],
  ])('refuses %j', (name, why) => {
    expect(packageNameProblem(name)).toMatch(why)
  })
})

describe('a host whose dpkg database cannot be read', () => {
  it('answers 502 with a code, never 500, for the list and the search', async () => {
    const t = await startTestKernel({ plugins: [createPackagesPlugin({ admindir: '/nonexistent/dpkg' })] })
    try {
      for (const url of ['/api/packages', '/api/packages/search?q=bash']) {
        const res = await t.inject({ url, as: 'viewer' })
        expect([res.statusCode, res.json().error], url).toEqual([502, 'HOSTD_PACKAGES_QUERY_FAILED'])
      }
    } finally {
      await t.close()
    }
  })
})

describe("apt's known errors", () => {
  // Lines as apt 2.6 prints them (LC_ALL=C); each of the four kinds is also produced by the real apt in packages.test.ts.
  it.each([
    [
      [
        'E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 812 (unattended-upgr)',
        'N: Be aware that removing the lock file is not a solution and may break your system.',
        'E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?',
      ].join('\n'),
      'HOSTD_PACKAGES_LOCKED',
      /^Another package manager is running \(unattended-upgr, process 812\)/,
    ],
    [
      [
        'Err:1 http://deb.debian.org/debian bookworm InRelease',
        "  Temporary failure resolving 'deb.debian.org'",
        "W: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease  Temporary failure resolving 'deb.debian.org'",
      ].join('\n'),
      'HOSTD_PACKAGES_OFFLINE',
      /^No internet connection: apt could not resolve deb\.debian\.org\./,
    ],
    [
      'E: Failed to fetch http://deb.debian.org/debian/pool/main/c/curl/curl_7.88.1_amd64.deb  ' +
        'Could not connect to deb.debian.org:80 (151.101.2.132), connection timed out',
      'HOSTD_PACKAGES_OFFLINE',
      /^No internet connection: apt could not reach deb\.debian\.org\./,
    ],
    [
      "E: Package 'python2' has no installation candidate",
      'HOSTD_PACKAGES_NOT_FOUND',
      /^No package python2 in apt's lists/,
    ],
  ])('translates %#', (output, code, message) => {
    const error = translateApt(output)
    expect(error?.code).toBe(code)
    expect(error?.message).toMatch(message)
    expect(error?.details?.raw).toContain(output.split('\n').find((l) => /^(E|W):/.test(l)))
  })
  it('leaves other output alone', () => {
    expect(translateApt('Reading package lists...\nE: Sub-process /usr/bin/dpkg returned an error code (1)')).toBeNull()
  })
})
