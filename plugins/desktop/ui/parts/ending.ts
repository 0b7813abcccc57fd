/**
 * Why a remote desktop connection ended, in words a person can act on (the close codes of plugins/desktop/README.md).
 * No DOM here, so it is tested without a browser.
 */

export interface Ending {
  /** The bridge socket's close code and reason (1006 when it never opened or dropped). */
  code: number
  reason: string
  /** The socket had opened (the upgrade succeeded). */
  opened: boolean
  /** The user pressed Disconnect. */
  byUser: boolean
  /** The VNC server refused the credentials (noVNC's securityfailure), with its reason when it gave one. */
  securityFailure?: { reason?: string }
}

export interface Explanation {
  title: string
  detail: string
  tone: 'neutral' | 'warning' | 'danger'
  /** Can connecting again help now? (false after a sign-out or a demotion: the page is about to go.) */
  canReconnect: boolean
}

/**
 * The explanation, or 'check-status' when only GET /api/system/desktop can tell: the browser sees 1006 for any
 * refusal before the upgrade (the 503 when no VNC server answers among them), and a server that closed the
 * connection may have stopped sharing.
 */
export function explainEnding(end: Ending): Explanation | 'check-status' {
  if (end.byUser)
    return { title: 'Disconnected', detail: 'Connect again to see the screen.', tone: 'neutral', canReconnect: true }
  if (end.securityFailure) {
    const why = end.securityFailure.reason ? ` It said: ${end.securityFailure.reason.replace(/[.!\s]+$/, '')}.` : ''
    return {
      title: 'The VNC server refused the password',
      detail: `Check the password and connect again.${why}`,
      tone: 'danger',
      canReconnect: true,
    }
  }
  switch (end.code) {
    case 4408:
      return {
        title: 'Closed after a while without activity',
        detail:
          'Nothing changed on the screen and nothing was typed for too long ' +
          '(HOSTD_DESKTOP_IDLE_SECONDS; a still screen counts as idle). Connect again to go on.',
        tone: 'neutral',
        canReconnect: true,
      }
    case 4401:
      return {
        title: 'Your session ended',
        detail: `${end.reason ? `${capitalize(end.reason)}. ` : ''}The screen connection was closed with it. Sign in again to reconnect.`,
        tone: 'neutral',
        canReconnect: false,
      }
    case 4403:
      return {
        title: 'You may no longer use the desktop',
        detail: 'Your role was changed: the remote desktop is for admins only.',
        tone: 'warning',
        canReconnect: false,
      }
    case 1008:
      return {
        title: 'The connection was closed',
        detail: 'Too much input was waiting for a VNC server that did not read it. Connect again.',
        tone: 'danger',
        canReconnect: true,
      }
    case 1003:
      return {
        title: 'The connection was closed',
        detail: 'The bridge takes raw RFB in binary frames only.',
        tone: 'danger',
        canReconnect: true,
      }
    case 1012:
      return {
        title: 'The desktop plugin was reloaded',
        detail: 'The connection was closed when the plugin restarted or was turned off. Connect again.',
        tone: 'warning',
        canReconnect: true,
      }
    case 1001:
      return {
        title: 'hostd is restarting or shutting down',
        detail: 'Connect again in a moment.',
        tone: 'warning',
        canReconnect: true,
      }
    default:
      return 'check-status'
  }
}

/** The explanation once the status is known, for the codes explainEnding could not tell (1000, 1006, 1011...). */
export function explainWithStatus(
  end: Ending,
  status: { available: boolean; reason: string | null } | null,
): Explanation {
  if (status && !status.available)
    return {
      title: 'Screen sharing is off',
      detail: status.reason ?? 'No VNC server answers.',
      tone: 'danger',
      canReconnect: true,
    }
  if (end.code === 1000)
    return {
      title: 'The VNC server ended the connection',
      detail: 'It may have restarted, or another viewer took the screen. Connect again.',
      tone: 'warning',
      canReconnect: true,
    }
  if (end.code === 1011)
    return {
      title: 'The connection to the VNC server failed',
      detail: 'The bridge lost its connection to the VNC server. Connect again.',
      tone: 'danger',
      canReconnect: true,
    }
  if (end.opened)
    return {
      title: 'The connection to hostd was lost',
      detail: 'The network dropped or hostd restarted. Connect again.',
      tone: 'danger',
      canReconnect: true,
    }
  return {
    title: 'The screen could not be reached',
    detail: 'hostd refused the connection or could not be reached. Connect again to retry.',
    tone: 'danger',
    canReconnect: true,
  }
}

const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)
