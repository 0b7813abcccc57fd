/** `tokens.secrets`: each plugin seals with a key of its own, derived from the daemon's key file. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { definePlugin, tokens, type SecretSealer } from '@hostd/sdk'
import { startTestKernel, type TestKernel } from '../src/testing.ts'

const sealers = new Map<string, SecretSealer>()
const plugin = (id: string) =>
  definePlugin({
    id,
    version: '1.0.0',
    kernel: '^1.3.0',
    deps: { secrets: tokens.secrets },
    setup: ({ secrets }) => void sealers.set(id, secrets),
  })

let t: TestKernel
beforeAll(async () => {
  t = await startTestKernel({ plugins: [plugin('alpha'), plugin('beta')] })
})
afterAll(() => t?.close())

describe('tokens.secrets', () => {
  it('opens what the same plugin sealed, and nothing another plugin sealed', async () => {
    const alpha = sealers.get('alpha')!
    const beta = sealers.get('beta')!
    const sealed = await alpha.seal('a password')
    expect(sealed).not.toContain('password')
    expect(await alpha.open(sealed)).toBe('a password')
    expect(await beta.open(sealed)).toBeNull()
    expect(await alpha.open(`${sealed.slice(0, -2)}xx`)).toBeNull()
    // Two seals of one text differ (a fresh nonce each).
    expect(await alpha.seal('a password')).not.toBe(sealed)
  })
})
