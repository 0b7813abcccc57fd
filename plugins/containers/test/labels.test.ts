/**
 * Provenance labels: only a plugin sets `dev.hostd.*` labels (through the service's RunOptions); a RunSpec caller
 * cannot, in any form `extraArgs` accepts. Checked before the engine is asked, so no engine is needed here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TestKernel } from '@hostd/sdk/testing'
import { kernelFor } from './support/kernel.ts'

describe('reserved provenance labels', () => {
  let t: TestKernel
  beforeAll(async () => {
    t = await kernelFor('unix:///nonexistent/hostd-no-engine.sock')
  })
  afterAll(async () => {
    await t?.close()
  })

  it('refuses a dev.hostd. label from a RunSpec, in every flag form, and lets other labels through to the engine', async () => {
    for (const extraArgs of [
      '--label dev.hostd.catalog.app=forged',
      '-l dev.hostd.catalog.source=x',
      ['--label=dev.hostd.anything=1'],
    ]) {
      const res = await t.inject({
        method: 'POST',
        url: '/api/containers',
        as: 'admin',
        payload: { image: 'busybox:1', extraArgs },
      })
      expect(res.statusCode, JSON.stringify(extraArgs)).toBe(400)
      expect(res.json()).toMatchObject({
        error: 'HOSTD_CONTAINERS_SPEC_INVALID',
        message: expect.stringContaining('dev.hostd.'),
      })
    }
    const ordinary = await t.inject({
      method: 'POST',
      url: '/api/containers',
      as: 'admin',
      payload: { image: 'busybox:1', extraArgs: '--label com.example.owner=me' },
    })
    expect(ordinary.statusCode).toBe(503)
    expect(ordinary.json().error).toBe('HOSTD_CONTAINERS_ENGINE_UNAVAILABLE')
  })
})
