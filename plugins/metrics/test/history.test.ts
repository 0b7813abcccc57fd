import { describe, expect, it } from 'vitest'
import { COARSE_CAPACITY, FINE_CAPACITY, History, Ring, downsample, type StoredPoint } from '../src/history.ts'

const point = (ms: number, cpu = 10, temp: number | null = null): StoredPoint => ({
  ms,
  cpu,
  iowait: 0,
  load1: 0.5,
  memUsedBytes: 1000,
  memTotalBytes: 4000,
  swapUsedBytes: 0,
  diskReadBytesPerSec: cpu * 10,
  diskWriteBytesPerSec: 0,
  netRxBytesPerSec: 0,
  netTxBytesPerSec: 0,
  maxTempCelsius: temp,
})

describe('history', () => {
  it('a ring keeps only its capacity, oldest first', () => {
    const ring = new Ring<number>(3)
    for (let i = 1; i <= 5; i++) ring.push(i)
    expect(ring.toArray()).toEqual([3, 4, 5])
    expect(ring.size).toBe(3)
    expect(ring.last()).toBe(5)
  })

  it('stays bounded at one hour of 2 s points and seven days of minute points', () => {
    const h = new History()
    const t0 = 1_700_000_000_000
    for (let i = 0; i < FINE_CAPACITY * 2; i++) h.add(2, point(t0 + i * 2000))
    for (let i = 0; i < COARSE_CAPACITY + 100; i++) h.add(60, point(t0 + i * 60_000))
    expect(h.fine.size).toBe(FINE_CAPACITY)
    expect(h.coarse.size).toBe(COARSE_CAPACITY)
    expect(h.fine.toArray()[0]!.ms).toBe(t0 + FINE_CAPACITY * 2000)
    // Pending points (not yet persisted) are bounded too.
    expect(h.takePending().length).toBeLessThanOrEqual(FINE_CAPACITY + COARSE_CAPACITY)
    expect(h.takePending()).toEqual([])
  })

  it('refuses points that go back in time', () => {
    const h = new History()
    h.add(2, point(10_000))
    h.add(2, point(8_000))
    expect(h.fine.toArray().map((p) => p.ms)).toEqual([10_000])
  })

  it('averages into buckets, keeping the hottest temperature', () => {
    const out = downsample(
      [point(60_000, 10, 40), point(120_000, 20, 55), point(600_000, 30, null), point(660_000, 50, 41)],
      600,
    )
    expect(out.map((p) => p.ms)).toEqual([600_000, 1_200_000])
    expect(out[0]!.cpu).toBe(20)
    expect(out[0]!.maxTempCelsius).toBe(55)
    expect(out[1]!.cpu).toBe(50)
    expect(out[1]!.diskReadBytesPerSec).toBe(500)
  })

  it('1h fills the minutes nobody streamed with minute points; 24h and 7d come from minute points', () => {
    const now = 10_000_000_000
    const h = new History()
    // Minute points for the last 10 minutes; 2 s points only within the last 3 minutes.
    for (let m = 10; m >= 1; m--) h.add(60, point(now - m * 60_000 + 1000, 5))
    for (let s = 170; s >= 2; s -= 2) h.add(2, point(now - s * 1000, 50))
    const hour = h.query('1h', now)
    const coarse = hour.points.filter((p) => p.stepSeconds === 60)
    const fine = hour.points.filter((p) => p.stepSeconds === 2)
    expect(fine.length).toBe(85)
    // Minute points whose minute (ms - 60 s, ms] holds 2 s points are left out: the two newest ones
    // (now-59 s and now-119 s); the one at now-179 s covers (now-239 s, now-179 s], before the first 2 s point.
    expect(coarse.length).toBe(8)
    expect(coarse.at(-1)!.t).toBe(new Date(now - 179_000).toISOString())
    expect(hour.points.map((p) => p.t)).toEqual([...hour.points.map((p) => p.t)].sort())
    expect(h.query('24h', now).points.length).toBe(10)
    const week = h.query('7d', now)
    expect(week.stepSeconds).toBe(600)
    expect(week.points.length).toBeGreaterThanOrEqual(1)
    expect(week.points.length).toBeLessThanOrEqual(2)
  })
})
