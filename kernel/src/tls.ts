import { execFile } from 'node:child_process'
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
  const pems = await generateSelfSigned(hostname())
  await mkdir(dirname(config.tlsKey), { recursive: true, mode: 0o700 })
  await writeFile(config.tlsKey, pems.private, { mode: 0o600 })
  await writeFile(config.tlsCert, pems.cert, { mode: 0o644 })
  return { cert: pems.cert, key: pems.private, generated: true }
}

/**
 * The generation runs in a short-lived node process (an argument vector, no shell): the x509 libraries cost about
 * 0.18 s of CPU to load, and loaded into the daemon they kept about 4.5 MiB of its RSS for the life of the process
 * (idle after setup and ten sign-ins: 116.5-117.1 MiB on a first start against 112.4-113.0 on a later one).
 */
async function generateSelfSigned(host: string): Promise<{ cert: string; private: string }> {
  const notBefore = Date.now() - 60_000
  const options = {
    host,
    notBefore,
    notAfter: notBefore + 825 * 24 * 3600 * 1000, // the longest validity browsers accept
    library: import.meta.resolve('selfsigned'),
  }
  const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) => {
    execFile(
      process.execPath,
      ['--input-type=module', '--eval', GENERATE, JSON.stringify(options)],
      { maxBuffer: 1 << 20 },
      (err, out, errOut) => {
        if (err) reject(new Error(`could not generate a TLS certificate: ${errOut.trim() || err.message}`))
        else resolve({ stdout: out })
      },
    )
  })
  return JSON.parse(stdout) as { cert: string; private: string }
}

/** The child's program: options as JSON in its first argument, the PEMs as JSON on stdout. */
const GENERATE = `
const { host, notBefore, notAfter, library } = JSON.parse(process.argv[1])
const { generate } = await import(library)
const pems = await generate([{ name: 'commonName', value: host }, { name: 'organizationName', value: 'hostd' }], {
  keyType: 'ec',
  curve: 'P-256',
  algorithm: 'sha256',
  notBeforeDate: new Date(notBefore),
  notAfterDate: new Date(notAfter),
  extensions: [
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: [
        { type: 2, value: 'localhost' },
        ...(host !== 'localhost' ? [{ type: 2, value: host }] : []),
        { type: 7, ip: '127.0.0.1' },
        { type: 7, ip: '::1' },
      ],
    },
  ],
})
process.stdout.write(JSON.stringify({ cert: pems.cert, private: pems.private }))
`
