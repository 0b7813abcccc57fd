/** The desktop plugin's shapes (README.md). */
import { Type, type Static } from '@hostd/sdk'

export const DesktopStatusSchema = Type.Object({
  /** A VNC server answered the RFB greeting on the target. */
  available: Type.Boolean(),
  /** The configured target, `host:port` (HOSTD_DESKTOP_VNC). */
  target: Type.String(),
  /** The server's greeting, e.g. `RFB 003.008`; null when none was read. */
  protocolVersion: Type.Union([Type.String(), Type.Null()]),
  /** Security types the server offers (RFC 6143: 1 None, 2 VNC Authentication, 19 VeNCrypt, 30 Apple ARD...). */
  authTypes: Type.Array(Type.Integer()),
  /** The server asks for credentials: it does not offer None (1). */
  authRequired: Type.Boolean(),
  /** The framebuffer size, read from ServerInit when the server needs no credentials; null otherwise. */
  display: Type.Union([Type.Object({ width: Type.Integer(), height: Type.Integer() }), Type.Null()]),
  /** The desktop's name from ServerInit, when read. */
  name: Type.Union([Type.String(), Type.Null()]),
  /** The bridge's WebSocket path, and its URL as seen by this request. */
  websocketPath: Type.String(),
  connectUrl: Type.String(),
  /** `vnc://host:port` for a native viewer when the target is not on loopback; null otherwise. */
  nativeUrl: Type.Union([Type.String(), Type.Null()]),
  /** Why it is unavailable (or why the size is unknown), a sentence an admin can act on; null when all is well. */
  reason: Type.Union([Type.String(), Type.Null()]),
})
export type DesktopStatus = Static<typeof DesktopStatusSchema>
