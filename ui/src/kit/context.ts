import type { ReadonlySignal } from '@preact/signals'
import type { Api, UploadOptions } from './api.ts'
import type { ConfirmOptions } from './dialog.tsx'
import type { Toaster } from './toast.tsx'

export type Role = 'viewer' | 'operator' | 'admin'

export interface SessionUser {
  id: string
  username: string
  role: Role
}

/**
 * Event name -> handler of its parsed JSON data (`message` for unnamed events). `E` maps each event to the data its
 * handler declares; the shell hands over the server's JSON as it came, unchecked.
 */
export type SseHandlers<E extends Record<string, unknown> = Record<string, unknown>> = {
  [K in keyof E]: (data: E[K], event: MessageEvent) => void
}

export interface SseOptions {
  /** Called when the stream (re)opens. */
  onOpen?: () => void
  /** Called when the connection drops; it reconnects by itself unless the session ended. */
  onError?: () => void
}

export interface Stream {
  close(): void
}

export interface SocketOptions {
  /** Binary frames arrive as ArrayBuffer (default Blob, as browsers do). */
  binary?: boolean
}

/**
 * What the shell hands every page and card element (`element.context`), before it is connected. Everything that
 * opens something (requests, streams, sockets) is tied to `signal`, which aborts when the element is removed.
 */
export interface PageContext {
  /** The signed-in user. A different user means a new page: the element is recreated. */
  user: SessionUser
  /** True when the user's role is at least `role` (hide what they may not use; the server still decides). */
  can(role: Role): boolean
  /** fetch with the session; JSON errors thrown as ApiError { status, code, message }. */
  api: Api
  /** A server-sent event stream (EventSource) with JSON data, closed with the page. */
  sse<E extends Record<string, unknown>>(path: string, handlers: SseHandlers<E>, options?: SseOptions): Stream
  /** A same-origin WebSocket to an API path (wss:// on https), closed with the page. */
  socket(path: string, options?: SocketOptions): WebSocket
  /** Uploads a file as the raw body with progress; parses the JSON answer. */
  upload<T = unknown>(path: string, body: Blob, options?: UploadOptions): Promise<T>
  /** Goes to a dashboard path (history entry; `replace` replaces it). */
  navigate(to: string, options?: { replace?: boolean }): void
  /** The current path and query string, for a page's own sub-routes under `base`. */
  location: ReadonlySignal<{ path: string; search: string }>
  /** The path the page is mounted at (`/containers`); a card's is `/`. */
  base: string
  toast: Toaster
  /** A confirmation dialog; `typed` makes the user type a word first. Resolves true when confirmed. */
  confirm(options: ConfirmOptions): Promise<boolean>
  /** Aborted when the element is removed (navigation, sign-out, plugin upgrade or removal). */
  signal: AbortSignal
  /** The plugin whose element this is (null for the shell's own pages). */
  plugin: { id: string; version: string } | null
}
