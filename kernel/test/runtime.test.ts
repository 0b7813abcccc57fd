import { describe, expect, it } from 'vitest'
import { ALLOCATOR_ENV, NODE_FLAGS, missingSettings } from '../src/runtime.ts'

describe('missingSettings', () => {
  it('asks for every setting when none is given', () => {
    expect(missingSettings({}, [])).toEqual({ env: { ...ALLOCATOR_ENV }, flags: [...NODE_FLAGS] })
  })

  it('asks for nothing once the restart has added them', () => {
    expect(missingSettings({ ...ALLOCATOR_ENV }, [...NODE_FLAGS])).toEqual({ env: {}, flags: [] })
  })

  it('keeps a value the user gave: in the environment, as a node flag, or in NODE_OPTIONS', () => {
    expect(
      missingSettings({ MALLOC_MMAP_THRESHOLD_: '65536', MALLOC_ARENA_MAX: '8' }, ['--max-semi-space-size=8']).env,
    ).toEqual({})
    expect(missingSettings({ MALLOC_ARENA_MAX: '8' }, []).env).toEqual({ MALLOC_MMAP_THRESHOLD_: '131072' })
    expect(missingSettings({}, ['--max-semi-space-size=8']).flags).toEqual(['--no-allocation-site-pretenuring'])
    expect(missingSettings({ NODE_OPTIONS: '--enable-source-maps  --max-semi-space-size=4' }, []).flags).toEqual([
      '--no-allocation-site-pretenuring',
    ])
    // The user asked for pretenuring back: their choice stands.
    expect(missingSettings({}, ['--allocation-site-pretenuring', '--max-semi-space-size=2']).flags).toEqual([])
  })

  it('matches flags by name, not by prefix or by value', () => {
    expect(
      missingSettings({ NODE_OPTIONS: '--max-semi-space-size-extra=1' }, ['--max-old-space-size=2']).flags,
    ).toEqual([...NODE_FLAGS])
  })
})
