/** The part of noVNC 1.7's RFB API the desktop page uses (docs/API.md of @novnc/novnc; the package ships no types). */
declare module '@novnc/novnc' {
  export interface RfbCredentials {
    username?: string
    password?: string
    target?: string
  }
  export interface RfbOptions {
    shared?: boolean
    credentials?: RfbCredentials
    repeaterID?: string
    wsProtocols?: string[]
  }
  /**
   * Events: `connect`, `disconnect` ({ clean }), `credentialsrequired` ({ types }), `securityfailure`
   * ({ status, reason }), `clipboard` ({ text }), `desktopname` ({ name }), `capabilities`.
   */
  export default class RFB extends EventTarget {
    constructor(target: HTMLElement, urlOrChannel: string | WebSocket, options?: RfbOptions)
    viewOnly: boolean
    scaleViewport: boolean
    clipViewport: boolean
    resizeSession: boolean
    focusOnClick: boolean
    showDotCursor: boolean
    background: string
    qualityLevel: number
    compressionLevel: number
    disconnect(): void
    sendCredentials(credentials: RfbCredentials): void
    sendCtrlAltDel(): void
    focus(options?: FocusOptions): void
    blur(): void
    clipboardPasteFrom(text: string): void
  }
}
