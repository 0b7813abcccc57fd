/** The services this plugin uses that are not the sdk's own tokens, as tokens of its own. */
import { createServiceToken, type Role } from '@hostd/sdk'
import type { Readable } from 'node:stream'
import type { WebSocket } from 'ws'
import type { ProvidedServices as PackageServices } from '../../packages/src/api.ts'

/** The kernel's `hostd.dispatch` (kernel/src/http/remote-dispatch.ts), for built-in plugins: its shape, restated. */
export interface RemoteDispatch {
  dispatch(request: {
    method: string
    url: string
    headers?: Record<string, string>
    body?: Buffer
    identity: { userId: string; username: string; role: Role; origin: string }
    signal?: AbortSignal
  }): Promise<{ status: number; headers: Record<string, string>; body: Readable }>
  /** An upgrade injected into this daemon's socket hub as the identity: the socket (paused), or the refusal. */
  openSocket(request: {
    url: string
    protocols?: string[]
    identity: { userId: string; username: string; role: Role; origin: string; session?: boolean }
  }): Promise<
    { ok: true; socket: WebSocket; protocol: string } | { ok: false; status: number; body: string; contentType: string }
  >
}
export const dispatchToken = createServiceToken<RemoteDispatch>('hostd.dispatch')
export const packageUpdates = createServiceToken<PackageServices['packages.updates']>('packages.updates')
