import { describe, expect, it } from 'vitest'
import { startTestKernel } from '@hostd/sdk/testing'
import { createPackagesPlugin } from '../src/index.ts'
import { DumpavailParser } from '../src/apt.ts'
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
      'zsh\tamd64\t5.9-4\tinstalled\t2500\tshell with lots of features\n' +
      'old\tall\t1.0\tconfig-files\t10\tremoved but configured\n' +
      'broken\tamd64\t2.0\thalf-configured\t\tsummary with\ta tab\n'
    expect(parseDpkgQuery(out)).toEqual([
      {
        name: 'broken',
        architecture: 'amd64',
        version: '2.0',
        state: 'half-configured',
        installedSizeInBytes: 0,
        summary: 'summary with\ta tab',
      },
      {
        name: 'zsh',
        architecture: 'amd64',
        version: '5.9-4',
        state: 'installed',
        installedSizeInBytes: 2_560_000,
        summary: 'shell with lots of features',
      },
    ])
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
