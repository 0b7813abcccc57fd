/**
 * Who made a remote call, signed by the calling member (Ed25519, node:crypto) and checked by the member that answers:
 * the assertion names the user, the role the origin host gives them, both hosts, the method and path, the SHA-256 of
 * the body, an expiry and a nonce (the request id). See README.md, "Identity".
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomUUID,
  sign,
  verify,
} from 'node:crypto'
import { isRole, type Role } from '@hostd/sdk'

export interface Assertion {
  v: 1
  /** The origin host (who signs). */
  iss: string
  /** The host it is for. */
  aud: string
  /** The user's id on the origin host, their name and role there. */
  sub: string
  name: string
  role: Role
  method: string
  path: string
  /** SHA-256 (hex) of the body, '' without one. */
  body: string
  /** The caller signed in with a session on the origin host (a person), not an API token: set on sockets. */
  ses?: boolean
  /** Seconds since the epoch. */
  exp: number
  /** The request id: each is accepted once. */
  jti: string
}

/** How long an assertion lives: a call is answered well within it. */
export const ASSERTION_TTL_SECONDS = 60

const b64 = (data: Buffer | string) => Buffer.from(data).toString('base64url')

export interface HostKeys {
  /** SPKI DER, base64url: what the registry publishes. */
  publicKey: string
  /** PKCS#8 PEM (kept sealed at rest). */
  privatePem: string
}

export function generateHostKeys(): HostKeys {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519')
  return {
    publicKey: b64(publicKey.export({ type: 'spki', format: 'der' })),
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  }
}

export const bodyDigest = (body: Buffer | undefined): string =>
  body && body.length > 0 ? createHash('sha256').update(body).digest('hex') : ''

export class Signer {
  readonly #key
  constructor(privatePem: string) {
    this.#key = createPrivateKey(privatePem)
  }

  sign(claims: Omit<Assertion, 'v' | 'exp' | 'jti'>, now = Date.now()): string {
    const assertion: Assertion = {
      v: 1,
      ...claims,
      exp: Math.floor(now / 1000) + ASSERTION_TTL_SECONDS,
      jti: randomUUID(),
    }
    const payload = b64(JSON.stringify(assertion))
    return `${payload}.${b64(sign(null, Buffer.from(payload), this.#key))}`
  }
}

/** Why an assertion was refused (never sent to the caller in detail beyond this sentence). */
export class AssertionError extends Error {}

/**
 * Checks an assertion against what the message itself says (the subject's origin, this host, the method, path and
 * body) and the origin's public key; each nonce is accepted once while it could still be valid.
 */
export class Verifier {
  readonly #seen = new Map<string, number>()

  verify(
    token: string,
    expect: { origin: string; self: string; method: string; path: string; body: string },
    publicKey: string | undefined,
    now = Date.now(),
  ): Assertion {
    if (!publicKey) throw new AssertionError(`no public key is known for host "${expect.origin}"`)
    const [payload, signature, extra] = token.split('.')
    if (!payload || !signature || extra !== undefined) throw new AssertionError('malformed assertion')
    const key = createPublicKey({ key: Buffer.from(publicKey, 'base64url'), format: 'der', type: 'spki' })
    if (!verify(null, Buffer.from(payload), key, Buffer.from(signature, 'base64url')))
      throw new AssertionError('bad signature')
    let a: Assertion
    try {
      a = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Assertion
    } catch {
      throw new AssertionError('malformed assertion')
    }
    if (a.v !== 1 || typeof a.jti !== 'string' || typeof a.exp !== 'number' || !isRole(a.role))
      throw new AssertionError('malformed assertion')
    if (a.iss !== expect.origin) throw new AssertionError(`signed by "${a.iss}", sent by "${expect.origin}"`)
    if (a.aud !== expect.self) throw new AssertionError(`meant for "${a.aud}"`)
    if (a.method !== expect.method || a.path !== expect.path || a.body !== expect.body)
      throw new AssertionError('the request differs from what was signed')
    const nowSeconds = Math.floor(now / 1000)
    if (a.exp < nowSeconds || a.exp > nowSeconds + ASSERTION_TTL_SECONDS + 30) throw new AssertionError('expired')
    this.#forget(nowSeconds)
    const key2 = `${a.iss}/${a.jti}`
    if (this.#seen.has(key2)) throw new AssertionError('replayed')
    this.#seen.set(key2, a.exp)
    return a
  }

  #forget(nowSeconds: number): void {
    for (const [jti, exp] of this.#seen) {
      if (exp >= nowSeconds) break
      this.#seen.delete(jti)
    }
  }
}
