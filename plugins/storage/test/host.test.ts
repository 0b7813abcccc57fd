import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { bind, definePlugin, type HostdError } from '@hostd/sdk'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { containerVolumesToken, storagePlugin } from '../src/index.ts'
import { parseSmart } from '../src/smart.ts'
import { startStorageHelper, type StorageHelper } from './support/storage-helper.ts'

const fixture = (name: string) => readFile(join(import.meta.dirname, 'fixtures', name), 'utf8')

describe('SMART parsing on recorded smartctl -j output', () => {
  it('reads an ATA disk: health, temperature, power-on hours, attributes with failing flags, and the raw JSON', async () => {
    const text = await fixture('smartctl-ata-sat.json')
    const report = parseSmart('sda', text, 0)
    expect(report).toMatchObject({
      device: 'sda',
      model: 'ST2000DM001-1CH164',
      serial: 'Z1E6A7B8',
      health: 'passed',
      temperatureC: 36,
      powerOnHours: 36055,
    })
    expect(report.attributes).toHaveLength(7)
    expect(report.attributes.find((a) => a.id === 5)).toEqual({
      id: 5,
      name: 'Reallocated_Sector_Ct',
      value: 100,
      worst: 100,
      threshold: 10,
      raw: '0',
      failing: false,
    })
    expect(report.attributes.find((a) => a.id === 190)).toMatchObject({ failing: true, raw: '36 (Min/Max 30/48)' })
    expect(report.raw).toEqual(JSON.parse(text))
  })

  it('reads an NVMe disk whose health check failed', async () => {
    const report = parseSmart('nvme0n1', await fixture('smartctl-nvme.json'), 0)
    expect(report).toMatchObject({
      health: 'failed',
      temperatureC: 41,
      powerOnHours: 8123,
      model: 'Samsung SSD 970 EVO Plus 1TB',
    })
    expect(report.attributes.find((a) => a.name === 'critical_warning')).toMatchObject({ raw: '4', failing: true })
    expect(report.attributes.find((a) => a.name === 'media_errors')).toMatchObject({ raw: '0', failing: false })
  })

  it('turns "Unable to detect device type" (recorded on this machine\'s virtio disk) into 409 with smartctl\'s reason', async () => {
    let caught: HostdError | undefined
    try {
      parseSmart('vda', await fixture('smartctl-virtio-unknown-type.json'), 1)
    } catch (err) {
      caught = err as HostdError
    }
    expect(caught).toMatchObject({ statusCode: 409, code: 'HOSTD_STORAGE_NO_SMART' })
    expect(caught!.message).toContain('Unable to detect device type')
    expect(() => parseSmart('x', 'not json', 2)).toThrow(/no readable report/)
  })
})

describe('storage overview, SMART and eject through the real helper', () => {
  let helper: StorageHelper
  let t: TestKernel
  let dataDir: string
  const standIn = definePlugin({
    // A stand-in for the containers plugin (built separately): it offers the same `containers.volumes` service.
    id: 'containers-standin',
    version: '1.0.0',
    kernel: '^1.0.0',
    provides: () => [
      bind(containerVolumesToken, {
        listVolumes: async () => [
          {
            name: 'db-data',
            driver: 'local',
            mountpoint: '/var/lib/docker/volumes/db-data/_data',
            usedBy: ['postgres'],
          },
        ],
      }),
    ],
  })

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'hostd-storage-host-'))
    helper = await startStorageHelper({})
    t = await startTestKernel({
      plugins: [storagePlugin({ roots: [{ name: 'files', path: dataDir }] })],
      env: { HOSTD_HELPER_SOCKET: helper.socket },
    })
  })
  afterAll(async () => {
    await t?.close()
    await helper?.stop()
    await rm(dataDir, { recursive: true, force: true })
  })

  it('lists disks (lsblk), mounted volumes with size/used/free, roots and shares; container volumes null without a provider', async () => {
    const res = await t.inject({ url: '/api/storage', as: 'viewer' })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body.disks.length).toBeGreaterThan(0)
    for (const disk of body.disks) {
      expect(existsSync(`/sys/block/${disk.name}`), disk.name).toBe(true)
      expect(typeof disk.removable).toBe('boolean')
      expect(Array.isArray(disk.partitions)).toBe(true)
    }
    const rootVolume = body.volumes.find((v: { mountpoint: string }) => v.mountpoint === '/')
    expect(rootVolume.size).toBeGreaterThan(0)
    expect(rootVolume.used + rootVolume.free).toBeLessThanOrEqual(rootVolume.size)
    expect(body.volumes.some((v: { fstype: string }) => ['proc', 'sysfs', 'cgroup2', 'tmpfs'].includes(v.fstype))).toBe(
      false,
    )
    expect(body.roots).toEqual([{ name: 'files', path: dataDir }])
    expect(body.shares).toEqual([])
    expect(body.containerVolumes).toBeNull()
  })

  it('shows container volumes while a plugin provides containers.volumes, and none once it is disabled', async () => {
    await t.kernel.registry.add(standIn)
    const on = (await t.inject({ url: '/api/storage', as: 'viewer' })).json()
    expect(on.containerVolumes).toEqual([
      { name: 'db-data', driver: 'local', mountpoint: '/var/lib/docker/volumes/db-data/_data', usedBy: ['postgres'] },
    ])
    await t.kernel.registry.disable('containers-standin')
    const off = await t.inject({ url: '/api/storage', as: 'viewer' })
    expect(off.statusCode).toBe(200)
    expect(off.json().containerVolumes).toBeNull()
  })

  it("answers SMART for this machine's disk through the helper: 409 with smartctl's reason on a disk without SMART", async () => {
    const disk = (await t.inject({ url: '/api/storage', as: 'viewer' }))
      .json()
      .disks.find((d: { size: number }) => d.size > 0)
    const res = await t.inject({ url: `/api/storage/smart/${disk.name}`, as: 'operator' })
    const entry = (await helper.log()).findLast((e) => e.action === 'storage.smart')
    expect(entry).toMatchObject({ outcome: 'ok', argv: ['smartctl', '-j', '-a', `/dev/${disk.name}`] })
    if (disk.name.startsWith('vd')) {
      // virtio disks have no SMART: smartctl cannot tell the device type.
      expect(res.statusCode).toBe(409)
      expect(res.json()).toMatchObject({ error: 'HOSTD_STORAGE_NO_SMART' })
      expect(res.json().message).toContain('Unable to detect device type')
    } else {
      expect([200, 409]).toContain(res.statusCode)
      if (res.statusCode === 200) expect(['passed', 'failed', 'unknown']).toContain(res.json().health)
    }
    expect((await t.inject({ url: '/api/storage/smart/nosuchdisk0', as: 'operator' })).statusCode).toBe(404)
    expect((await t.inject({ url: '/api/storage/smart/..%2Fsda', as: 'operator' })).statusCode).toBe(400)
  })

  it('refuses to eject a non-removable disk with 409 (the plugin, and the helper on its own)', async () => {
    const disk = (await t.inject({ url: '/api/storage', as: 'viewer' }))
      .json()
      .disks.find((d: { removable: boolean }) => !d.removable)
    const res = await t.inject({
      method: 'POST',
      url: '/api/storage/eject',
      as: 'admin',
      payload: { device: disk.name },
    })
    expect(res.statusCode).toBe(409)
    expect(res.json().error).toBe('HOSTD_STORAGE_NOT_REMOVABLE')
    expect(await helper.call('storage.eject', { device: disk.name })).toMatchObject({
      ok: false,
      status: 409,
      error: 'HOSTD_HELPER_NOT_REMOVABLE',
    })
    expect(await helper.call('storage.eject', { device: 'nosuchdisk0' })).toMatchObject({ ok: false, status: 404 })
    expect(
      (await t.inject({ method: 'POST', url: '/api/storage/eject', as: 'admin', payload: { device: '-rf' } }))
        .statusCode,
    ).toBe(400)
    expect((await helper.log()).some((e) => e.action === 'storage.eject' && e.argv)).toBe(false)
  })
})
