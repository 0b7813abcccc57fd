/**
 * noVNC on the desktop bridge, in a chunk of its own (about 56 KB gzipped) that loads only with the desktop page.
 * noVNC 1.7 is ESM with a top-level await (its H.264 probe), so it is imported, never bundled into a script. The page
 * opens the WebSocket itself (offering the `binary` subprotocol) and hands it to RFB, so it can read the close code
 * and reason, which noVNC's own `disconnect` event does not carry.
 */
import RFB from '@novnc/novnc'
import type { Ending } from './ending.ts'

export interface ViewerEvents {
  onConnect(): void
  /** The VNC server asks for credentials (`types`: "password", maybe "username"); answer with `sendCredentials`. */
  onCredentials(types: string[]): void
  onName(name: string): void
  /** The server's clipboard changed. */
  onClipboard(text: string): void
  /** The connection ended, for whatever reason (explainEnding says what to tell the user). */
  onEnd(end: Ending): void
}

export interface ViewerOptions {
  viewOnly: boolean
  scale: boolean
}

export interface Viewer {
  setViewOnly(on: boolean): void
  setScale(on: boolean): void
  sendCredentials(credentials: { username?: string; password: string }): void
  sendCtrlAltDel(): void
  /** Sets the remote clipboard (the server pastes it where the user pastes next). */
  sendClipboard(text: string): void
  disconnect(): void
}

export function openViewer(target: HTMLElement, url: string, options: ViewerOptions, events: ViewerEvents): Viewer {
  const socket = new WebSocket(url, ['binary'])
  let opened = false
  let byUser = false
  let closed: { code: number; reason: string } | null = null
  let securityFailure: Ending['securityFailure']
  socket.addEventListener('open', () => (opened = true))
  socket.addEventListener('close', (event) => (closed = { code: event.code, reason: event.reason }))

  const rfb = new RFB(target, socket, { shared: true })
  rfb.viewOnly = options.viewOnly
  rfb.scaleViewport = options.scale
  rfb.background = 'transparent'
  rfb.addEventListener('connect', () => events.onConnect())
  rfb.addEventListener('credentialsrequired', (e) =>
    events.onCredentials((e as CustomEvent<{ types: string[] }>).detail.types),
  )
  rfb.addEventListener('desktopname', (e) => events.onName((e as CustomEvent<{ name: string }>).detail.name))
  rfb.addEventListener('clipboard', (e) => events.onClipboard((e as CustomEvent<{ text: string }>).detail.text))
  rfb.addEventListener(
    'securityfailure',
    (e) => (securityFailure = { reason: (e as CustomEvent<{ reason?: string }>).detail.reason }),
  )
  rfb.addEventListener('disconnect', () => {
    // noVNC reports the end when the socket has closed (its own handler runs after the one above).
    events.onEnd({ code: closed?.code ?? 1006, reason: closed?.reason ?? '', opened, byUser, securityFailure })
  })

  return {
    setViewOnly: (on) => (rfb.viewOnly = on),
    setScale: (on) => (rfb.scaleViewport = on),
    sendCredentials: (credentials) => rfb.sendCredentials(credentials),
    sendCtrlAltDel: () => rfb.sendCtrlAltDel(),
    sendClipboard: (text) => rfb.clipboardPasteFrom(text),
    disconnect: () => {
      byUser = true
      rfb.disconnect()
    },
  }
}
