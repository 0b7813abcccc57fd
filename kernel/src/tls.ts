import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { X509Certificate } from 'node:crypto'
import { hostname } from 'node:os'
import { dirname } from 'node:path'
import { ConfigError, type KernelConfig } from './config.ts'

export interface TlsMaterial {
  cert: string
  key: string
  generated: boolean
}

/**
 * A user-supplied cert and key win. Otherwise a self-signed SHA-256 certificate is generated once into
 * the data dir (SANs: localhost, 127.0.0.1, ::1 and this host's name) and reused on every later start.
 */
export async function ensureTls(config: KernelConfig): Promise<TlsMaterial> {
  if (existsSync(config.tlsCert) && existsSync(config.tlsKey)) {
    const [cert, key] = await Promise.all([readFile(config.tlsCert, 'utf8'), readFile(config.tlsKey, 'utf8')])
    try {
      new X509Certificate(cert)
    } catch {
      throw new ConfigError(`${config.tlsCert} is not a PEM certificate`)
    }
    return { cert, key, generated: false }
  }
  if (config.tlsUserSupplied) {
    const missing = [config.tlsCert, config.tlsKey].filter((f) => !existsSync(f))
    throw new ConfigError(`HOSTD_TLS_CERT/HOSTD_TLS_KEY: ${missing.join(' and ')} not found`)
  }
  if (existsSync(config.tlsCert) !== existsSync(config.tlsKey)) {
    throw new ConfigError(`found only one of ${config.tlsCert} and ${config.tlsKey}; supply both or remove the other`)
  }
  const host = hostname()
  const notBefore = new Date(Date.now() - 60_000)
  const notAfter = new Date(notBefore.getTime() + 825 * 24 * 3600 * 1000) // the longest validity browsers accept
  // Loaded only here: the x509 libraries cost about 0.18 s of CPU and 20 MiB to load, and only a first start needs them.
  const { generate } = await import('selfsigned')
  const pems = await generate([{ name: 'commonName', value: host }, { name: 'organizationName', value: 'hostd' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: notBefore,
    notAfterDate: notAfter,
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2 as const, value: 'localhost' },
          ...(host !== 'localhost' ? [{ type: 2 as const, value: host }] : []),
          { type: 7 as const, ip: '127.0.0.1' },
          { type: 7 as const, ip: '::1' },
        ],
      },
    ],
  })
  await mkdir(dirname(config.tlsKey), { recursive: true, mode: 0o700 })
  await writeFile(config.tlsKey, pems.private, { mode: 0o600 })
  await writeFile(config.tlsCert, pems.cert, { mode: 0o644 })
  return { cert: pems.cert, key: pems.private, generated: true }
}
