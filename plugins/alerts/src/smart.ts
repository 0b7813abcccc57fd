/**
 * SMART health for the smart rules: the disks in /sys/block (whole disks, no partitions, loop, RAM or device-mapper
 * devices) and smartctl's self-assessment, read through the root helper's `storage.smart` action (smartctl -j -a),
 * the storage plugin's own read. Only `smart_status.passed` is used; a disk without SMART is skipped.
 */
import { readdir } from 'node:fs/promises'
import type { HelperClient } from '@hostd/sdk'
import type { DiskHealth } from './rules.ts'

const SKIP = /^(loop|ram|dm-|zram|sr|md|nbd)/

export async function listDisks(root = '/sys/block'): Promise<string[]> {
  // Tests pass a folder of their own; the helper checks the name against the real /sys/block again.
  try {
    return (await readdir(root)).filter((name) => !SKIP.test(name))
  } catch {
    return []
  }
}

interface SmartctlJson {
  smart_status?: { passed?: boolean }
  model_name?: string
}

export async function readSmartHealth(helper: HelperClient, disk: string): Promise<DiskHealth | null> {
  try {
    const out = await helper.call<{ stdout?: string }>('storage.smart', { device: disk })
    const json = JSON.parse(out.stdout ?? '') as SmartctlJson
    if (typeof json.smart_status?.passed !== 'boolean') return null
    return { disk, passed: json.smart_status.passed, model: json.model_name ?? 'unknown model' }
  } catch {
    return null
  }
}
