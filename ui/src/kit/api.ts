/**
 * The API client every page gets through its context: fetch with the session cookie, JSON in and out, and the
 * server's `{ error, message }` turned into a thrown ApiError. A 401 tells the shell the session ended (it then
 * shows the sign-in page and comes back afterwards).
 */

/**
 * An error answer of the API: `status` (HTTP), `code` (HOSTD_...), `message` (a sentence to show) and, where the
 * server translated a tool's message, `details`: the tool's own words (the reply's `details.raw`), which toasts and
 * ErrorState show collapsed under "Details".
 */
export class ApiError extends Error {
  override name = 'ApiError'
  readonly status: number
  readonly code: string
  readonly details: string | undefined
  constructor(status: number, code: string, message: string, details?: string) {
    super(message)
    this.status = status
    this.code = code
    this.details = details
  }
}

/** The reply's `details` as text: its `raw` when there is one, else the object as JSON. */
function detailsText(details: unknown): string | undefined {
  if (details === undefined || details === null) return undefined
  if (typeof details === 'string') return details
  const raw = (details as { raw?: unknown }).raw
  if (typeof raw === 'string') return raw
  try {
    return JSON.stringify(details)
  } catch {
    return undefined
  }
}

export interface RequestOptions {
  /** Aborts the request (the page's own signal is always combined in). */
  signal?: AbortSignal
  headers?: Record<string, string>
  /** Send this body as it is (a Blob, FormData...) instead of as JSON. */
  raw?: BodyInit
  /** Answer the Response instead of its parsed JSON. */
  response?: boolean
}

export interface Api {
  get<T = unknown>(path: string, options?: RequestOptions): Promise<T>
  post<T = unknown>(path: string, body?: unknown, options?: RequestOptions): Promise<T>
  put<T = unknown>(path: string, body?: unknown, options?: RequestOptions): Promise<T>
  patch<T = unknown>(path: string, body?: unknown, options?: RequestOptions): Promise<T>
  delete<T = unknown>(path: string, options?: RequestOptions): Promise<T>
  request<T = unknown>(method: string, path: string, body?: unknown, options?: RequestOptions): Promise<T>
}

/** Tells the shell the daemon did not answer (it shows the Disconnected banner and reconnects: shell/connection.ts). */
export function unreachable(): void {
  if (typeof window !== 'undefined') dispatchEvent(new Event('hostd:unreachable'))
}

/** Reads an error answer (JSON or not) into an ApiError. */
export async function toApiError(res: Response): Promise<ApiError> {
  let code = `HTTP_${res.status}`
  let message = res.statusText || `The server answered ${res.status}`
  let details: string | undefined
  try {
    const body = (await res.json()) as { error?: unknown; message?: unknown; details?: unknown }
    if (typeof body.error === 'string') code = body.error
    if (typeof body.message === 'string') message = body.message
    details = detailsText(body.details)
  } catch {
    /* not JSON: keep the status line */
  }
  return new ApiError(res.status, code, message, details)
}

function combine(a: AbortSignal | undefined, b: AbortSignal | undefined): AbortSignal | undefined {
  return a && b ? AbortSignal.any([a, b]) : (a ?? b)
}

/** What the server answers when a change needs the password given again ("sudo mode"). */
export const REAUTH_REQUIRED = 'HOSTD_AUTH_REAUTH_REQUIRED'

export interface ApiOptions {
  signal?: AbortSignal
  /** Runs on any 401: the session ended. */
  onUnauthorized?: () => void
  /**
   * Asks the person for their password again when a change answers HOSTD_AUTH_REAUTH_REQUIRED; resolves true once it
   * was accepted, and the request is then sent again (it was refused before anything happened).
   */
  onReauth?: () => Promise<boolean>
}

/**
 * An API client. `signal` (the page's lifetime) aborts every request still running when the page goes away;
 * `onUnauthorized` runs on any 401, `onReauth` on a change that needs the password again.
 */
export function createApi(options: ApiOptions = {}): Api {
  const request = async <T>(
    method: string,
    path: string,
    body?: unknown,
    opts: RequestOptions = {},
    reauthed = false,
  ): Promise<T> => {
    const headers: Record<string, string> = { accept: 'application/json', ...opts.headers }
    let payload: BodyInit | undefined = opts.raw
    if (payload === undefined && body !== undefined) {
      headers['content-type'] = 'application/json'
      payload = JSON.stringify(body)
    }
    const signal = combine(options.signal, opts.signal)
    const send = () => fetch(path, { method, headers, body: payload, credentials: 'same-origin', signal })
    let res: Response
    try {
      // A read is sent once more after a network failure: Chromium drops requests in flight when the machine's
      // network interfaces change (ERR_NETWORK_CHANGED), which starting a container does when the browser runs on
      // the host it manages. A change is never sent twice.
      res = await send().catch(async (err: unknown) => {
        if ((err as Error).name === 'AbortError' || method !== 'GET') throw err
        await new Promise((resolve) => setTimeout(resolve, 300))
        return send()
      })
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err
      unreachable()
      throw new ApiError(0, 'HOSTD_NETWORK', 'The server cannot be reached. Check the connection and try again.')
    }
    if (!res.ok) {
      const error = await toApiError(res)
      if (res.status === 401) options.onUnauthorized?.()
      if (error.code === REAUTH_REQUIRED && !reauthed && options.onReauth && (await options.onReauth()))
        return request<T>(method, path, body, opts, true)
      throw error
    }
    if (opts.response) return res as T
    if (res.status === 204) return undefined as T
    const type = res.headers.get('content-type') ?? ''
    return (type.includes('json') ? await res.json() : await res.text()) as T
  }
  return apiOver((method, path, body, opts) => request(method, path, body, opts))
}

/** The Api methods over one request function (the shell's fetch, or the isolated frame's bridge). */
export function apiOver(request: Api['request']): Api {
  return {
    request,
    get: (path, o) => request('GET', path, undefined, o),
    post: (path, body, o) => request('POST', path, body, o),
    put: (path, body, o) => request('PUT', path, body, o),
    patch: (path, body, o) => request('PATCH', path, body, o),
    delete: (path, o) => request('DELETE', path, undefined, o),
  }
}

export interface UploadOptions {
  method?: string
  headers?: Record<string, string>
  signal?: AbortSignal
  /** Called as bytes go out: `loaded` of `total`. */
  onProgress?: (loaded: number, total: number) => void
}

/** Sends a file or blob as the raw body, with upload progress (fetch has none), and parses the JSON answer. */
export function upload<T = unknown>(
  path: string,
  body: Blob,
  options: UploadOptions = {},
  onUnauthorized?: () => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const xhr = new XMLHttpRequest()
    xhr.open(options.method ?? 'POST', path)
    xhr.setRequestHeader('content-type', body.type || 'application/octet-stream')
    for (const [name, value] of Object.entries(options.headers ?? {})) xhr.setRequestHeader(name, value)
    xhr.upload.onprogress = (e) => options.onProgress?.(e.loaded, e.lengthComputable ? e.total : body.size)
    xhr.onload = () => {
      const res = new Response(xhr.status === 204 ? null : xhr.responseText, {
        status: xhr.status,
        headers: { 'content-type': xhr.getResponseHeader('content-type') ?? '' },
      })
      if (res.ok) {
        void (
          xhr.status === 204 || !xhr.responseText
            ? Promise.resolve(undefined)
            : res.json().catch(() => xhr.responseText)
        ).then((v) => resolve(v as T))
      } else {
        if (xhr.status === 401) onUnauthorized?.()
        void toApiError(res).then(reject)
      }
    }
    xhr.onerror = () => {
      unreachable()
      reject(new ApiError(0, 'HOSTD_NETWORK', 'The upload was interrupted: the server cannot be reached.'))
    }
    xhr.onabort = () => reject(new DOMException('The upload was cancelled', 'AbortError'))
    options.signal?.addEventListener('abort', () => xhr.abort(), { once: true })
    xhr.send(body)
  })
}

/** The same-origin WebSocket URL of an API path (`/api/x` -> `wss://host/api/x`). */
export function socketUrl(path: string): string {
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${path}`
}

/** The tool's own words behind an error, if it carries them (ApiError's `details`). */
export function errorDetails(err: unknown): string | undefined {
  return err instanceof ApiError ? err.details : undefined
}

/** A short sentence for any thrown value. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message
  return String(err)
}
