import { describe, expect, it } from 'vitest'
import { configFromEnv, parseRoots } from '../src/config.ts'
import { contentDisposition, looksLikeText, parseRange } from '../src/files.ts'
import { parseSmbUrl } from '../src/shares.ts'

describe('storage configuration and header parsing', () => {
  it('reads HOSTD_FILE_ROOTS as name=/abs/path pairs, defaulting to <data dir>/files', () => {
    expect(parseRoots(undefined, '/var/lib/hostd')).toEqual([{ name: 'files', path: '/var/lib/hostd/files' }])
    expect(parseRoots('media=/srv/media/, home=/home/alice', '/d')).toEqual([
      { name: 'media', path: '/srv/media' },
      { name: 'home', path: '/home/alice' },
    ])
    for (const bad of ['media', 'media=relative', 'Media=/srv', 'a=/srv,a=/home', 'x=/srv/../etc'])
      expect(() => parseRoots(bad, '/d'), bad).toThrow(/HOSTD_FILE_ROOTS/)
    expect(configFromEnv({ HOSTD_STORAGE_UPLOAD_MAX_BYTES: '1024' }, '/d').uploadMaxBytes).toBe(1024)
    expect(() => configFromEnv({ HOSTD_STORAGE_UPLOAD_MAX_BYTES: '-1' }, '/d')).toThrow()
  })

  it('parses one byte range per RFC 9110 and ignores what it does not serve', () => {
    expect(parseRange('bytes=0-9', 100)).toEqual({ start: 0, end: 9 })
    expect(parseRange('bytes=90-', 100)).toEqual({ start: 90, end: 99 })
    expect(parseRange('bytes=90-500', 100)).toEqual({ start: 90, end: 99 })
    expect(parseRange('bytes=-10', 100)).toEqual({ start: 90, end: 99 })
    expect(parseRange('bytes=-500', 100)).toEqual({ start: 0, end: 99 })
    expect(parseRange('bytes=100-', 100)).toBe('unsatisfiable')
    expect(parseRange('bytes=-0', 100)).toBe('unsatisfiable')
    expect(parseRange('bytes=0-0', 0)).toBe('unsatisfiable')
    for (const ignored of [undefined, 'bytes=5-1', 'bytes=0-1,5-6', 'items=0-1', 'bytes=-', 'bytes=a-b'])
      expect(parseRange(ignored, 100), String(ignored)).toBeNull()
  })

  it('builds an RFC 6266 Content-Disposition whose fallback cannot break the header', () => {
    expect(contentDisposition('report.pdf')).toBe(`attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`)
    expect(contentDisposition('a"b\\c\r\nd.txt')).toBe(
      `attachment; filename="a_b_c__d.txt"; filename*=UTF-8''a%22b%5Cc%0D%0Ad.txt`,
    )
    expect(contentDisposition("it's (1).txt")).toBe(
      `attachment; filename="it's (1).txt"; filename*=UTF-8''it%27s%20%281%29.txt`,
    )
  })

  it('tells text from binary, allowing a character cut by the preview cap', () => {
    expect(looksLikeText(Buffer.from('plain'), false)).toBe(true)
    expect(looksLikeText(Buffer.from([0x61, 0, 0x62]), false)).toBe(false)
    const cut = Buffer.from('aé').subarray(0, 2) // 'a' and half of 'é'
    expect(looksLikeText(cut, true)).toBe(true)
    expect(looksLikeText(cut, false)).toBe(false)
    expect(looksLikeText(Buffer.from([0xff, 0xfe, 0x41]), false)).toBe(false)
  })

  it('splits smb:// urls', () => {
    expect(parseSmbUrl('smb://nas/Media%20Files')).toEqual({ server: 'nas', share: 'Media Files' })
    expect(parseSmbUrl('SMB://10.0.0.2/backup/')).toEqual({ server: '10.0.0.2', share: 'backup' })
    for (const bad of ['smb://nas', 'http://nas/x', 'smb://nas/a/b', 'smb://nas/%E0%A4%A'])
      expect(() => parseSmbUrl(bad), bad).toThrow()
  })
})
