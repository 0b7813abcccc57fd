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

export async function auditActions(
  t: TestKernel,
): Promise<{ action: string; target: string; result: string; username: string | null; detail: any }[]> {
  const res = await t.inject({ url: '/api/audit?range=all&limit=500', as: 'admin' })
  return res.json().items
}
