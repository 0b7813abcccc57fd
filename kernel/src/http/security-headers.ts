import type { ServerResponse } from 'node:http'

/** On every answer, HTTP or a refused WebSocket upgrade: no framing, no sniffing, no referrer. */
export function setSecurityHeaders(res: ServerResponse): void {
  res.setHeader('x-frame-options', 'DENY')
  res.setHeader('content-security-policy', "frame-ancestors 'none'")
  res.setHeader('x-content-type-options', 'nosniff')
  res.setHeader('referrer-policy', 'no-referrer')
}
