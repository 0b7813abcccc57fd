/** The signed assertion a calling member sends and the answering member checks (src/identity.ts). */
import { describe, expect, it } from 'vitest'
import { AssertionError, bodyDigest, generateHostKeys, Signer, Verifier } from '../src/identity.ts'

const a = generateHostKeys()
const other = generateHostKeys()
const claims = {
  iss: 'a',
  aud: 'b',
  sub: 'u1',
  name: 'alice',
  role: 'viewer' as const,
  method: 'POST',
  path: '/api/bento/widgets',
  body: bodyDigest(Buffer.from('{"x":1}')),
}
const expect0 = { origin: 'a', self: 'b', method: 'POST', path: '/api/bento/widgets', body: claims.body }

describe('assertions', () => {
  it('verifies once what the origin signed, for this host, this request and this body', () => {
    const signer = new Signer(a.privatePem)
    const verifier = new Verifier()
    const token = signer.sign(claims)
    expect(verifier.verify(token, expect0, a.publicKey)).toMatchObject({ iss: 'a', name: 'alice', role: 'viewer' })
    expect(() => verifier.verify(token, expect0, a.publicKey)).toThrow(/replayed/)
  })

  it('refuses another key, another origin, another target, a changed request and an expired one', () => {
    const signer = new Signer(a.privatePem)
    const refused = (token: string, over: Partial<typeof expect0>, key = a.publicKey) => {
      expect(() => new Verifier().verify(token, { ...expect0, ...over }, key)).toThrow(AssertionError)
    }
    refused(signer.sign(claims), {}, other.publicKey)
    refused(signer.sign(claims), {}, '')
    refused(signer.sign(claims), { origin: 'c' })
    refused(signer.sign(claims), { self: 'c' })
    refused(signer.sign(claims), { path: '/api/users' })
    refused(signer.sign(claims), { method: 'DELETE' })
    refused(signer.sign(claims), { body: bodyDigest(Buffer.from('{"x":2}')) })
    refused(signer.sign(claims, Date.now() - 120_000), {})
    const [payload, signature] = signer.sign(claims).split('.')
    const raised = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), role: 'admin' }),
    ).toString('base64url')
    refused(`${raised}.${signature}`, {})
  })
})
