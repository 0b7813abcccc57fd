import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StaticFiles, StaticFolderError } from './static-files.ts'

describe('StaticFiles.load', () => {
  let root: string
  let outside: string

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'hostd-static-'))
    outside = await mkdtemp(join(tmpdir(), 'hostd-static-outside-'))
    await writeFile(join(outside, 'secret.txt'), 'not served')
    await mkdir(join(root, 'assets', 'deep'), { recursive: true })
    await writeFile(join(root, 'index.html'), '<!doctype html><title>x</title>')
    await writeFile(join(root, 'assets', 'app.js'), 'x'.repeat(1000))
    await writeFile(join(root, 'assets', 'app.js.gz'), 'precompressed')
    await writeFile(join(root, 'assets', 'deep', 'logo.svg'), '<svg/>')
    await writeFile(join(root, '.hidden'), 'skipped')
    await symlink(join(outside, 'secret.txt'), join(root, 'link.txt'))
    await symlink(outside, join(root, 'linked-dir'))
  })
  afterAll(async () => {
    await rm(root, { recursive: true, force: true })
    await rm(outside, { recursive: true, force: true })
  })

  it('holds every regular file below the folder, nested ones too, with the precompressed forms beside them', async () => {
    const files = await StaticFiles.load(root, { compress: false })
    expect(files.paths().sort()).toEqual(['assets/app.js', 'assets/deep/logo.svg', 'index.html'])
    expect(files.get('assets/app.js')?.body.toString()).toBe('x'.repeat(1000))
    expect(files.get('assets/app.js')?.gzip?.toString()).toBe('precompressed')
    expect(files.get('assets/deep/logo.svg')?.type).toBe('image/svg+xml')
  })

  it('skips links and dotfiles: nothing outside the folder is served', async () => {
    const files = await StaticFiles.load(root, { compress: false })
    expect(files.get('link.txt')).toBeUndefined()
    expect(files.get('linked-dir/secret.txt')).toBeUndefined()
    expect(files.get('.hidden')).toBeUndefined()
  })

  it('refuses a folder over its limits, in files or in bytes', async () => {
    await expect(
      StaticFiles.load(root, { compress: false, limits: { maxFiles: 3, maxBytes: 1 << 20 } }),
    ).rejects.toBeInstanceOf(StaticFolderError)
    await expect(StaticFiles.load(root, { compress: false, limits: { maxFiles: 10, maxBytes: 500 } })).rejects.toThrow(
      /more than 10 files or 500 bytes/,
    )
    await expect(
      StaticFiles.load(root, { compress: false, limits: { maxFiles: 4, maxBytes: 2000 } }),
    ).resolves.toBeInstanceOf(StaticFiles)
  })
})
