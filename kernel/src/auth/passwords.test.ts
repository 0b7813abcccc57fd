import { describe, expect, it } from 'vitest'
import { hashPassword, passwordWeakness, verifyPassword } from './passwords.ts'

describe('passwords', () => {
  it('hashes with argon2id at OWASP parameters (19 MiB, t=2, p=1) and verifies', async () => {
    const hash = await hashPassword('correct horse battery')
    expect(hash).toMatch(/^\$argon2id\$v=19\$m=19456,p=1,t=2\$/)
    expect(await verifyPassword(hash, 'correct horse battery')).toBe(true)
    expect(await verifyPassword(hash, 'Correct horse battery')).toBe(false)
    expect(await verifyPassword('not a hash', 'x')).toBe(false)
  })

  it.each([
    ['', /at least 8/],
    ['short', /at least 8/],
    ['aaaaaaaaaaaa', /4 different/],
    ['password123', /common/],
    ['alice-rocks-99', /username/],
  ])('refuses %j', (pw, why) => {
    expect(passwordWeakness(pw, 'alice')).toMatch(why)
  })

  it('accepts a reasonable passphrase', () => {
    expect(passwordWeakness('correct horse battery', 'alice')).toBeNull()
  })
})
