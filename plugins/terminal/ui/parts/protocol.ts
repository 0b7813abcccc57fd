/**
 * The terminal socket's protocol as the page sees it (plugins/terminal/README.md): the server's text frames, and why
 * a terminal ended, in words a person can act on. No DOM here, so it is tested without a browser.
 */

export type ServerFrame =
  | { type: 'ready'; account: string; shell: string; pid: number; cols: number; rows: number }
  | { type: 'error'; error: string; message: string }
  | { type: 'exit'; code: number | null; signal: string | null }

/** A text frame from the server, or null when it is not one of ours. */
export function parseFrame(text: string): ServerFrame | null {
  try {
    const frame = JSON.parse(text) as ServerFrame
    return frame && typeof frame === 'object' && ['ready', 'error', 'exit'].includes(frame.type) ? frame : null
  } catch {
    return null
  }
}

/** What the page knows when a terminal socket closes. */
export interface Ending {
  code: number
  reason: string
  /** The socket had opened (the upgrade succeeded). */
  opened: boolean
  /** The last error frame, when one came (it comes before the close codes 44xx and 4500). */
  error?: { error: string; message: string }
  /** The exit frame, when the shell exited. */
  exit?: { code: number | null; signal: string | null }
}

export interface Explanation {
  title: string
  detail: string
  /** danger: something is wrong; neutral: an ordinary end (the shell exited, the user signed out). */
  tone: 'neutral' | 'warning' | 'danger'
  /** May a new shell help right away? (false after a sign-out or a demotion: the page is about to go.) */
  canReconnect: boolean
}

/** The plugin's entry in GET /api/extensions, read when a close leaves the reason unknown (1006, 1012). */
export interface PluginEntry {
  state: 'active' | 'disabled' | 'unavailable' | 'failed'
  reason?: string
  error?: string
}

const AGAIN = 'Reconnect (or press Enter) to open a new shell.'

/**
 * Why the terminal ended. Returns 'ask-plugin' when only the plugin's state can tell: a browser sees 1006 for any
 * refusal before the upgrade (401, 403, 503) and for a dropped connection, and 1012 means the plugin was reloaded,
 * disabled or removed.
 */
export function explainEnding(end: Ending): Explanation | 'ask-plugin' {
  const told = end.error && sentence(end.error.message)
  if (end.exit) {
    const { code, signal } = end.exit
    const how = signal ? `was ended by ${signal}` : code ? `exited with status ${code}` : 'exited'
    return {
      title: `The shell ${how}`,
      detail: AGAIN,
      tone: signal || code ? 'warning' : 'neutral',
      canReconnect: true,
    }
  }
  switch (end.code) {
    case 4408:
      return {
        title: 'Closed after a while without activity',
        detail: `${told ?? 'Nothing was typed or printed for too long (HOSTD_TERMINAL_IDLE_SECONDS).'} ${AGAIN}`,
        tone: 'neutral',
        canReconnect: true,
      }
    case 4429:
      return {
        title: 'Too many terminals open',
        detail: `${told ?? 'You have as many terminals open as allowed (HOSTD_TERMINAL_MAX_SESSIONS): close one.'} Then reconnect.`,
        tone: 'warning',
        canReconnect: true,
      }
    case 4503:
      return {
        title: 'The terminal is unavailable',
        detail: told ?? "The shell's account cannot be used right now.",
        tone: 'danger',
        canReconnect: true,
      }
    case 4500:
      return {
        title: 'The shell could not be started',
        detail: told ?? 'Starting the shell failed.',
        tone: 'danger',
        canReconnect: true,
      }
    case 4401:
      return {
        title: 'Your session ended',
        detail: `${sentence(end.reason || 'session ended')} The shell was closed with it. Sign in again to open a new one.`,
        tone: 'neutral',
        canReconnect: false,
      }
    case 4403:
      return {
        title: 'You may no longer use the terminal',
        detail: 'Your role was changed: the terminal is for admins only. The shell was closed.',
        tone: 'warning',
        canReconnect: false,
      }
    case 1009:
      return {
        title: 'The connection was closed',
        detail: `A message was too large for the server (over 16 MiB). ${AGAIN}`,
        tone: 'danger',
        canReconnect: true,
      }
    case 1001:
      return {
        title: 'hostd is restarting or shutting down',
        detail: `The shell was closed. ${AGAIN}`,
        tone: 'warning',
        canReconnect: true,
      }
    case 1006:
    case 1012:
      return 'ask-plugin'
    default:
      return {
        title: 'The terminal closed',
        detail: `${told ?? (end.reason ? sentence(end.reason) : `The server closed the connection (code ${end.code}).`)} ${AGAIN}`,
        tone: 'warning',
        canReconnect: true,
      }
  }
}

/** The explanation for 1006 and 1012, once the plugin's entry is known (null: the plugin is not installed). */
export function explainWithPlugin(end: Ending, plugin: PluginEntry | null): Explanation {
  if (!plugin)
    return {
      title: 'The terminal was removed',
      detail: 'The terminal plugin is no longer installed.',
      tone: 'danger',
      canReconnect: false,
    }
  if (plugin.state === 'unavailable')
    return {
      title: 'The terminal is unavailable',
      detail: plugin.reason ?? 'A condition of the terminal plugin is not met.',
      tone: 'danger',
      canReconnect: true,
    }
  if (plugin.state === 'disabled')
    return {
      title: 'The terminal was turned off',
      detail: 'An admin disabled the terminal plugin; the shell was closed.',
      tone: 'warning',
      canReconnect: false,
    }
  if (plugin.state === 'failed')
    return {
      title: 'The terminal plugin failed',
      detail: plugin.error ?? 'The terminal plugin could not be loaded.',
      tone: 'danger',
      canReconnect: false,
    }
  if (end.code === 1012)
    return {
      title: 'The terminal plugin was reloaded',
      detail: `The shell was closed when the plugin restarted. ${AGAIN}`,
      tone: 'warning',
      canReconnect: true,
    }
  if (end.opened)
    return {
      title: 'The connection to hostd was lost',
      detail: `The network dropped or hostd restarted; the shell was closed. ${AGAIN}`,
      tone: 'danger',
      canReconnect: true,
    }
  return {
    title: 'The terminal could not be opened',
    detail: 'hostd refused the connection or could not be reached. Reconnect to try again.',
    tone: 'danger',
    canReconnect: true,
  }
}

function sentence(text: string): string {
  const s = text.charAt(0).toUpperCase() + text.slice(1)
  return /[.!?]$/.test(s) ? s : `${s}.`
}
