/**
 * The SMART rule: disks listed from a block folder (a test folder standing in for /sys/block), their health read
 * through the root helper's `storage.smart` action. The helper is a stand-in answering smartctl's JSON (no disk here
 * has failing SMART data to read, and the helper's own tests cover the action); the default rule fires for the
 * failing disk only, and resolves when it passes again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { bind, tokens, type HelperClient } from '@hostd/sdk'
import { eventually, startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { createAlertsPlugin } from '../src/index.ts'

describe('SMART health', () => {
  let t: TestKernel
  let blockDir: string
  const failing = new Set(['sdb'])
  const calls: unknown[] = []
  const helper: HelperClient = {
    available: async () => true,
    call: async <T>(action: string, args?: Record<string, unknown>) => {
      calls.push({ action, args })
      const device = String(args?.device)
      if (device === 'nvme0n1') return { stdout: JSON.stringify({ smartctl: { messages: [] } }), exitCode: 4 } as T
      return {
        stdout: JSON.stringify({ model_name: `Disk ${device}`, smart_status: { passed: !failing.has(device) } }),
        exitCode: 0,
      } as T
    },
  }

  beforeAll(async () => {
    blockDir = await mkdtemp(join(tmpdir(), 'hostd-alerts-block-'))
    for (const name of ['sda', 'sdb', 'nvme0n1', 'loop0', 'dm-0']) await mkdir(join(blockDir, name))
    t = await startTestKernel({
      plugins: [createAlertsPlugin({ smartIntervalMs: 200, attachIntervalMs: 60_000, blockDir })],
      services: [bind(tokens.helper, helper)],
    })
  })
  afterAll(async () => {
    await t?.close()
    await rm(blockDir, { recursive: true, force: true })
  })

  it('fires the default rule for a disk failing its self-assessment, and resolves when it passes', async () => {
    const firing = async () =>
      (await t.inject({ url: '/api/alerts', as: 'viewer' })).json().items as {
        ruleId: string
        target: string
        summary: string
      }[]
    await eventually(async () => (await firing()).length === 1)
    expect(await firing()).toEqual([
      expect.objectContaining({
        ruleId: 'smart-failing',
        target: 'sdb',
        summary: 'Disk sdb (Disk sdb) fails its SMART self-assessment',
      }),
    ])
    // Only whole disks are read: no loop or device-mapper devices; a disk without SMART data is skipped.
    const devices = new Set(calls.map((c) => (c as { args: { device: string } }).args.device))
    expect([...devices].sort()).toEqual(['nvme0n1', 'sda', 'sdb'])
    failing.clear()
    await eventually(async () => (await firing()).length === 0)
    const history = (await t.inject({ url: '/api/alerts/history', as: 'viewer' })).json().items
    expect(history[0]).toMatchObject({ ruleId: 'smart-failing', target: 'sdb' })
    expect(history[0].endsAt).not.toBeNull()
  })
})
