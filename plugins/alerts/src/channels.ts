/**
 * Sending one notification through one channel: a webhook (Alertmanager's webhook payload, version 4, signed with
 * HMAC-SHA256), email over SMTP (nodemailer, loaded on first use), ntfy (one HTTP POST) and the Apprise CLI (an
 * argument vector, no shell). A failure becomes one sentence a person understands (`describeFailure`).
 */
import { execFile } from 'node:child_process'
import { createHash, createHmac } from 'node:crypto'
import { access, constants } from 'node:fs/promises'
import type { ChannelKind, ChannelOptions } from './schemas.ts'

export interface Notice {
  status: 'firing' | 'resolved'
  ruleId: string
  ruleName: string
  target: string
  severity: 'info' | 'warning' | 'critical'
  summary: string
  value: number | null
  labels: Record<string, string>
  startsAt: string
  endsAt: string | null
}

export interface Notification {
  status: 'firing' | 'resolved'
  alerts: Notice[]
  /** hostd's address (the link in the message). */
  externalUrl: string
  hostname: string
  /** A "send a test" message. */
  test?: boolean
}

export interface ChannelTarget {
  id: string
  name: string
  type: ChannelKind
  options: ChannelOptions
  secret: string | null
}

const TIMEOUT_MS = 15_000
/** Where the Apprise CLI is looked for (Debian's package puts it in /usr/bin). */
export const APPRISE_PATHS = ['/usr/bin/apprise', '/usr/local/bin/apprise']

/** A delivery failure already put in words. */
export class DeliveryError extends Error {}

const ZERO_TIME = '0001-01-01T00:00:00Z'

export const fingerprint = (n: Notice) =>
  createHash('sha256').update(`${n.ruleId}\u0000${n.target}`).digest('hex').slice(0, 16)

export const alertsLink = (n: Notification) => `${n.externalUrl.replace(/\/+$/, '')}/alerts`

/** Alertmanager's webhook payload (version 4), as its receivers expect it. */
export function webhookPayload(n: Notification, receiver: string): Record<string, unknown> {
  const labelsOf = (a: Notice) => ({
    alertname: a.ruleName,
    rule: a.ruleId,
    severity: a.severity,
    instance: n.hostname,
    target: a.target,
    ...a.labels,
  })
  const alerts = n.alerts.map((a) => ({
    status: a.status,
    labels: labelsOf(a),
    annotations: { summary: a.summary, ...(a.value === null ? {} : { value: String(a.value) }) },
    startsAt: a.startsAt,
    endsAt: a.endsAt ?? ZERO_TIME,
    generatorURL: alertsLink(n),
    fingerprint: fingerprint(a),
  }))
  const common = (pick: (a: (typeof alerts)[number]) => Record<string, string>) => {
    const [first, ...rest] = alerts.map(pick)
    if (!first) return {}
    return Object.fromEntries(Object.entries(first).filter(([k, v]) => rest.every((o) => o[k] === v)))
  }
  const groupLabels = { alertname: n.alerts[0]?.ruleName ?? 'hostd' }
  return {
    version: '4',
    groupKey: `{}:{alertname=${JSON.stringify(groupLabels.alertname)}}`,
    truncatedAlerts: 0,
    status: n.status,
    receiver,
    groupLabels,
    commonLabels: common((a) => a.labels),
    commonAnnotations: common((a) => a.annotations),
    externalURL: n.externalUrl,
    alerts,
  }
}

/** The header a webhook receiver checks: `sha256=` and the hex HMAC-SHA256 of the exact body bytes. */
export const SIGNATURE_HEADER = 'x-hostd-signature-256'
export const signBody = (secret: string, body: string) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`

/** A subject line and a plain-text body for email, ntfy and Apprise. */
export function messageText(n: Notification): { title: string; body: string } {
  const first = n.alerts[0]
  const word = n.test ? 'TEST' : n.status === 'firing' ? 'FIRING' : 'RESOLVED'
  const title = first
    ? `[${word}] ${first.ruleName} on ${n.hostname}: ${first.target}`
    : `[${word}] hostd on ${n.hostname}`
  const lines: string[] = []
  if (n.test) lines.push('A test message from hostd: this channel works.', '')
  for (const a of n.alerts) {
    lines.push(a.status === 'firing' ? a.summary : `Resolved: ${a.summary}`)
    lines.push(`  Rule: ${a.ruleName} (${a.severity})`, `  Target: ${a.target}`)
    if (a.value !== null) lines.push(`  Value: ${a.value}`)
    lines.push(`  Since: ${a.startsAt}${a.endsAt ? `, ended ${a.endsAt}` : ''}`, '')
  }
  lines.push(`Open hostd: ${alertsLink(n)}`)
  return { title, body: lines.join('\n') }
}

export async function appriseInstalled(): Promise<string | null> {
  for (const path of APPRISE_PATHS) {
    try {
      await access(path, constants.X_OK)
      return path
    } catch {
      // Not here.
    }
  }
  return null
}

export async function deliver(channel: ChannelTarget, n: Notification): Promise<void> {
  try {
    switch (channel.type) {
      case 'webhook':
        return await sendWebhook(channel, n)
      case 'email':
        return await sendEmail(channel, n)
      case 'ntfy':
        return await sendNtfy(channel, n)
      case 'apprise':
        return await sendApprise(channel, n)
    }
  } catch (err) {
    throw new DeliveryError(describeFailure(err, channel))
  }
}

async function post(url: string, body: string, headers: Record<string, string>): Promise<void> {
  const res = await fetch(url, {
    method: 'POST',
    body,
    headers,
    signal: AbortSignal.timeout(TIMEOUT_MS),
    redirect: 'error',
  })
  if (res.ok) {
    await res.body?.cancel()
    return
  }
  const text = (await res.text().catch(() => '')).replace(/\s+/g, ' ').trim().slice(0, 200)
  throw new DeliveryError(`${new URL(url).host} answered ${res.status} ${res.statusText}${text ? `: ${text}` : ''}`)
}

async function sendWebhook(channel: ChannelTarget, n: Notification): Promise<void> {
  const body = JSON.stringify(webhookPayload(n, channel.name))
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'hostd-alerts' }
  if (channel.secret) headers[SIGNATURE_HEADER] = signBody(channel.secret, body)
  await post(required(channel.options.url, 'a URL'), body, headers)
}

async function sendNtfy(channel: ChannelTarget, n: Notification): Promise<void> {
  const { title, body } = messageText(n)
  const firing = n.status === 'firing' && !n.test
  const headers: Record<string, string> = {
    'content-type': 'text/plain; charset=utf-8',
    // ntfy reads headers as ISO-8859-1 unless told otherwise; RFC 2047 encoding keeps any title intact.
    title: `=?UTF-8?B?${Buffer.from(title).toString('base64')}?=`,
    priority: String(channel.options.priority ?? (firing && n.alerts.some((a) => a.severity === 'critical') ? 5 : 3)),
    tags: n.test ? 'test_tube' : firing ? 'rotating_light' : 'white_check_mark',
    click: alertsLink(n),
  }
  if (channel.secret) headers.authorization = `Bearer ${channel.secret}`
  await post(required(channel.options.url, 'a topic URL'), body, headers)
}

async function sendEmail(channel: ChannelTarget, n: Notification): Promise<void> {
  const o = channel.options
  const { createTransport } = await import('nodemailer')
  const security = o.security ?? 'starttls'
  const transport = createTransport({
    host: required(o.host, 'a mail server'),
    port: o.port ?? (security === 'tls' ? 465 : 587),
    secure: security === 'tls',
    requireTLS: security === 'starttls',
    ignoreTLS: security === 'none',
    auth: o.username ? { user: o.username, pass: channel.secret ?? '' } : undefined,
    tls: { rejectUnauthorized: o.verifyCertificate !== false },
    connectionTimeout: TIMEOUT_MS,
    greetingTimeout: TIMEOUT_MS,
    socketTimeout: TIMEOUT_MS,
  })
  try {
    const { title, body } = messageText(n)
    await transport.sendMail({
      from: required(o.from, 'a sender'),
      to: required(o.to, 'recipients'),
      subject: title,
      text: body,
    })
  } finally {
    transport.close()
  }
}

function sendApprise(channel: ChannelTarget, n: Notification): Promise<void> {
  return appriseInstalled().then(async (path) => {
    if (!path) throw new DeliveryError('The Apprise CLI is not installed on this host (apt install apprise)')
    const urls = (channel.secret ?? '').split(/\s+/).filter(Boolean)
    if (urls.length === 0) throw new DeliveryError('No Apprise URL is set')
    const { title, body } = messageText(n)
    const info = n.test || n.alerts.every((a) => a.severity === 'info')
    const type = n.status === 'resolved' && !n.test ? 'success' : info ? 'info' : 'failure'
    await new Promise<void>((resolve, reject) => {
      // An argument vector: the URLs and texts never reach a shell. `--` ends the options before the URLs.
      execFile(
        path,
        ['--title', title, '--body', body, '--notification-type', type, '--', ...urls],
        {
          timeout: TIMEOUT_MS,
          maxBuffer: 1 << 20,
          env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent', LANG: 'C.UTF-8' },
        },
        (err, _stdout, stderr) => {
          if (!err) return resolve()
          const line = stderr
            .split('\n')
            .map((l) => l.trim())
            .filter(Boolean)
            .pop()
          reject(
            new DeliveryError(
              `Apprise could not deliver${line ? `: ${line.replace(/https?:\/\/\S+/g, '<url>')}` : ''}`,
            ),
          )
        },
      )
    })
  })
}

function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new DeliveryError(`The channel has no ${what}`)
  return value
}

/** One sentence for a person: what went wrong and where, without secrets. */
export function describeFailure(err: unknown, channel: ChannelTarget): string {
  if (err instanceof DeliveryError) return err.message
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException; responseCode?: number; response?: string }
  const where =
    channel.type === 'email'
      ? `${channel.options.host}:${channel.options.port ?? ''}`.replace(/:$/, '')
      : hostOf(channel.options.url)
  const code = e.cause?.code ?? e.code
  const causeMessage = e.cause?.message ?? ''
  if (e.name === 'TimeoutError' || code === 'ETIMEDOUT' || code === 'ETIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT')
    return `${where} did not answer in time`
  if (code === 'ECONNREFUSED') return `Nothing accepts connections at ${where} (connection refused)`
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `The name ${where.split(':')[0]} could not be resolved`
  if (/^bad port$/i.test(e.message) || /bad port/i.test(causeMessage))
    return `The port of ${where} is one that HTTP clients refuse to use (choose another port)`
  if (code === 'ECONNRESET') return `${where} closed the connection`
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return `${where} cannot be reached from this host`
  if (code === 'EAUTH')
    return `The mail server refused the user name or password${e.response ? ` (${e.response})` : ''}`
  if (code === 'ETLS' || /certificate|self.signed|SSL|TLS/i.test(`${e.message} ${causeMessage}`)) {
    if (/self.signed/i.test(`${e.message} ${causeMessage} ${code}`))
      return `The certificate of ${where} is self-signed and not trusted (turn off "verify certificate" only if you trust this server)`
    return `A secure connection to ${where} failed: ${causeMessage || e.message}`
  }
  if (code === 'EENVELOPE') return `The mail server refused the sender or recipients: ${e.response ?? e.message}`
  if (code === 'EMESSAGE' || typeof e.responseCode === 'number')
    return `The mail server refused the message: ${e.response ?? e.message}`
  if (channel.type === 'email' && code === 'ESOCKET')
    return `The connection to ${where} failed: ${causeMessage || e.message}`
  return `Delivery failed: ${causeMessage || e.message || String(err)}`
}

function hostOf(url: string | undefined): string {
  try {
    return url ? new URL(url).host : 'the channel'
  } catch {
    return 'the channel'
  }
}
