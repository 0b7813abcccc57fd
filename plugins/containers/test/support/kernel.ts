/** A test kernel with the containers plugin pointed at a test engine, and small helpers for the tests. */
import type { HostdPlugin } from '@hostd/sdk'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import containers from '../../src/index.ts'

/** `overNetwork`: every `inject` goes over a real HTTP connection; `plugins`: more plugins next to this one. */
export async function kernelFor(
  dockerHost: string,
  env: Record<string, string> = {},
  options: { overNetwork?: boolean; plugins?: HostdPlugin[] } = {},
): Promise<TestKernel> {
  return startTestKernel({
    plugins: [containers, ...(options.plugins ?? [])],
    listen: true,
    overNetwork: options.overNetwork,
    env: { DOCKER_HOST: dockerHost, ...env },
  })
}

export { openSocket, type SocketSession } from '../../../../test/support/ws-session.ts'

/** Polls `fn` until it returns a truthy value (no timing asserted: the test's own timeout bounds it). */
export async function eventually<T>(fn: () => Promise<T | null | undefined | false>, everyMs = 100): Promise<T> {
  for (;;) {
    const v = await fn()
    if (v) return v
    await new Promise((r) => setTimeout(r, everyMs))
  }
}

export async function auditActions(
  t: TestKernel,
): Promise<{ action: string; target: string; result: string; username: string | null; detail: any }[]> {
  const res = await t.inject({ url: '/api/audit?range=all&limit=500', as: 'admin' })
  return res.json().items
}
