import type { IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders, ServerResponse } from 'node:http'

// node:http by process.getBuiltinModule, not `import`: its ES module facade reads every export, and the lazy
// WebSocket export loads Node's bundled undici (about 50 ms and 13 MiB; docs/ARCHITECTURE.md, "Runtime").
const http = process.getBuiltinModule('node:http')

const SECURITY_HEADERS = {
  'x-frame-options': 'DENY',
  'content-security-policy': "frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
} as const
const NAMES = Object.keys(SECURITY_HEADERS) as (keyof typeof SECURITY_HEADERS)[]

/**
 * What `/api` answers hold is private (a token's secret, users, sessions, the audit log...): no cache, in the
 * browser or on the way, may keep it. A route whose answer is public and cacheable says so itself (the branding
 * background, container icons) and keeps its own value.
 */
const NO_STORE = 'no-store'
const isApi = (url: string | undefined) =>
  url?.startsWith('/api') === true && (url.length === 4 || url[4] === '/' || url[4] === '?')

/**
 * No framing, no sniffing, no referrer (and no caching of an `/api` answer), on a response whose head is still
 * unwritten. A header already set is kept.
 */
export function setSecurityHeaders(res: ServerResponse, url: string | undefined = res.req?.url): void {
  for (const name of NAMES) if (!res.hasHeader(name)) res.setHeader(name, SECURITY_HEADERS[name])
  if (isApi(url) && !res.hasHeader('cache-control')) res.setHeader('cache-control', NO_STORE)
}

/**
 * The server's response class: every answer gets the security headers (and an `/api` answer `no-store`) as its head
 * is written, whoever writes it
 * (Fastify, a hijacked stream, Node's implicit head). Adding them to the object Fastify hands to writeHead keeps
 * Node on its fast path, which a setHeader call before it leaves: measured 4-5 µs of the ~75 µs each request
 * costs (npm run bench).
 */
export class SecureResponse<Request extends IncomingMessage = IncomingMessage> extends http.ServerResponse<Request> {
  override writeHead(
    statusCode: number,
    reasonOrHeaders?: string | OutgoingHttpHeaders | OutgoingHttpHeader[],
    headers?: OutgoingHttpHeaders | OutgoingHttpHeader[],
  ): this {
    const given = typeof reasonOrHeaders === 'string' ? headers : reasonOrHeaders
    if (given && !Array.isArray(given) && Object.isExtensible(given)) {
      for (const name of NAMES)
        if (given[name] === undefined && !this.hasHeader(name)) given[name] = SECURITY_HEADERS[name]
      if (given['cache-control'] === undefined && !this.hasHeader('cache-control') && isApi(this.req.url))
        given['cache-control'] = NO_STORE
    } else {
      setSecurityHeaders(this)
    }
    return typeof reasonOrHeaders === 'string'
      ? super.writeHead(statusCode, reasonOrHeaders, headers)
      : super.writeHead(statusCode, reasonOrHeaders)
  }
}
