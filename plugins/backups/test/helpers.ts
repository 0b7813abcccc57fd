/** A test kernel with the backups plugin (and the containers plugin when an engine is given), and small helpers. */
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { HostdPlugin } from '@hostd/sdk'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { createBackupsPlugin } from '../src/index.ts'

export interface Harness {
  t: TestKernel
  /** The restore root `files` (HOSTD_FILE_ROOTS' default name). */
  root: string
}

export async function backupsKernel(
  options: { plugins?: HostdPlugin[]; env?: Record<string, string>; now?: () => number; rootHelper?: boolean } = {},
): Promise<Harness> {
  const root = await mkdtemp(join(tmpdir(), 'hostd-restore-root-'))
  const t = await startTestKernel({
    plugins: [
      ...(options.plugins ?? []),
      createBackupsPlugin({ roots: [{ name: 'files', path: root }], now: options.now, rootHelper: options.rootHelper }),
    ],
    listen: true,
    env: options.env,
  })
  return { t, root }
}

export async function post(t: TestKernel, url: string, payload?: object) {
  return t.inject({ method: 'POST', url, as: 'admin', ...(payload === undefined ? {} : { payload }) })
}

export async function get(t: TestKernel, url: string) {
  return t.inject({ url, as: 'admin' })
}

/** Creates a repository and answers its id (and the creation answer). */
export async function repository(t: TestKernel, name: string, location: unknown, extra: Record<string, unknown> = {}) {
  const res = await post(t, '/api/backups/repositories', { name, location, ...extra })
  if (res.statusCode !== 201) throw new Error(`repository ${name}: ${res.statusCode} ${res.body}`)
  return res.json() as {
    repository: { id: string; repository: string }
    recoveryKit: { password: string; text: string } | null
  }
}

export async function job(t: TestKernel, body: Record<string, unknown>): Promise<string> {
  const res = await post(t, '/api/backups/jobs', { intervalMinutes: null, checkEveryDays: null, ...body })
  if (res.statusCode !== 201) throw new Error(`job: ${res.statusCode} ${res.body}`)
  return res.json().id
}

export async function runJob(t: TestKernel, id: string) {
  return post(t, `/api/backups/jobs/${id}/run?wait=true`)
}
