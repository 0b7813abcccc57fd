/**
 * Local receivers for the channel tests: an HTTP server that records every request (a webhook receiver, and the
 * stand-in for an ntfy server: none runs here, and ntfy is one HTTP POST per message), and a real SMTP server
 * (the `smtp-server` package) that records every message, with TLS from a self-signed certificate.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { SMTPServer } from 'smtp-server'

export interface Recorded {
  method: string
  url: string
  headers: IncomingHttpHeaders
  body: string
}

export interface HttpReceiver {
  url: string
  requests: Recorded[]
  /** Answer this status (200 by default) to what comes next. */
  status: number
  close(): Promise<void>
}

export async function httpReceiver(): Promise<HttpReceiver> {
  const requests: Recorded[] = []
  const receiver = { requests, status: 200 } as HttpReceiver
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      })
      res.statusCode = receiver.status
      res.end(receiver.status === 200 ? 'ok' : 'receiver is down for the test')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  receiver.close = () => new Promise((resolve) => server.close(() => resolve()))
  return receiver
}

export interface Mail {
  from: string
  to: string[]
  raw: string
  secure: boolean
  user: string | null
}

export interface SmtpReceiver {
  port: number
  mails: Mail[]
  close(): Promise<void>
}

let certificate: Promise<{ key: Buffer; cert: Buffer }> | null = null

/** A self-signed certificate for 127.0.0.1 and localhost, made once per test file with openssl. */
function selfSigned(): Promise<{ key: Buffer; cert: Buffer }> {
  certificate ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hostd-alerts-tls-'))
    try {
      await promisify(execFile)('openssl', [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ])
      return { key: await readFile(join(dir, 'key.pem')), cert: await readFile(join(dir, 'cert.pem')) }
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })()
  return certificate
}

/** `secure`: TLS from the first byte (implicit TLS); otherwise plain with STARTTLS offered. Auth: user/pass. */
export async function smtpReceiver(options: { secure: boolean; user?: string; pass?: string }): Promise<SmtpReceiver> {
  const mails: Mail[] = []
  const { key, cert } = await selfSigned()
  const server = new SMTPServer({
    secure: options.secure,
    key,
    cert,
    authOptional: !options.user,
    disabledCommands: options.user ? [] : ['AUTH'],
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === options.user && auth.password === options.pass)
        return callback(null, { user: auth.username })
      return callback(new Error('Invalid user name or password'))
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString(),
          secure: session.secure,
          user: (session.user as string | undefined) ?? null,
        })
        callback()
      })
    },
  })
  // A client that gives up mid-handshake (a certificate it refuses) is an error event on the server: expected here.
  server.on('error', () => undefined)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.server.address() as AddressInfo).port
  return { port, mails, close: () => new Promise((resolve) => server.close(() => resolve())) }
}
