/**
 * The start-time recovery of installs (kernel/src/plugins/install.ts, `recoverInstalls`) on states the install's own
 * sequence does not leave, built on disk here: what a person or another program may have done to a staging folder
 * between a crash and the next start. The states the real sequence leaves are tested by killing a real daemon at each
 * step: test/e2e/install-crash.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Logger } from 'pino'
import type { AuditEvent, AuditService } from '@hostd/sdk'
import { recoverInstalls } from '../src/plugins/install.ts'

const quiet = { warn: () => undefined, error: () => undefined } as unknown as Logger

describe('recovering installs from states built by hand', () => {
  let root: string
  const records: AuditEvent[] = []
  const audit: AuditService = { record: async (event) => void records.push(event) }
  const version = (dir: string) => readFile(join(dir, 'package.json'), 'utf8').then((t) => JSON.parse(t).version)
  const plugin = async (dir: string, v: string) => {
    await mkdir(dir, { recursive: true })
    await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'hostd-plugin-hello', version: v }))
  }

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'hostd-recover-'))
    records.length = 0
  })
  afterEach(() => rm(root, { recursive: true, force: true }))

  it('an intent whose new version is gone, with none in place: the old version goes back', async () => {
    const staging = join(root, '.staging-a')
    await plugin(join(staging, 'previous'), '1.0.0')
    await writeFile(join(staging, 'intent.json'), JSON.stringify({ folder: 'hello' }))
    const done = await recoverInstalls(root, quiet, audit)
    expect(done).toEqual([{ staging: '.staging-a', folder: 'hello', outcome: 'finished' }])
    expect(await version(join(root, 'hello'))).toBe('1.0.0')
    expect(await readdir(root)).toEqual(['hello'])
    expect(records).toMatchObject([{ action: 'plugin.install.recover', target: 'hello' }])
  })

  it('an intent that is not JSON, or names no safe folder: discarded, the installed version untouched', async () => {
    await plugin(join(root, 'hello'), '1.0.0')
    const intents: [string, string][] = [
      ['.staging-b', '{not json'],
      ['.staging-c', JSON.stringify({ folder: '../outside' })],
    ]
    for (const [name, intent] of intents) {
      await plugin(join(root, name, 'next'), '9.9.9')
      await writeFile(join(root, name, 'intent.json'), intent)
    }
    const done = await recoverInstalls(root, quiet, audit)
    expect(done.map((d) => d.outcome)).toEqual(['discarded', 'discarded'])
    expect(await version(join(root, 'hello'))).toBe('1.0.0')
    expect(await readdir(root)).toEqual(['hello'])
  })

  it('a staging name that is a file: deleted too; other dot-entries are left alone', async () => {
    await writeFile(join(root, '.staging-d'), 'not a folder')
    await mkdir(join(root, '.git'))
    await recoverInstalls(root, quiet, audit)
    expect((await readdir(root)).sort()).toEqual(['.git'])
  })
})
