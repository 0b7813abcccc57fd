/**
 * Stand-ins for the two providers the rules read, for tests that drive the rule engine step by step: a metrics
 * sampler whose snapshots the test hands over, and a container engine whose states and events the test sets. The
 * end-to-end tests (e2e.test.ts) use the real metrics plugin and a real engine instead.
 */
import { bind } from '@hostd/sdk'
import type { ContainerEvent, ContainerState } from '../../../containers/src/api.ts'
import type { MetricsSnapshot } from '../../../metrics/src/api.ts'
import { containerStates, metricsSamples } from '../../src/service.ts'

export function snapshot(filesystems: Record<string, number>, cpu = 5): MetricsSnapshot {
  const usage = { usage: cpu, user: cpu, system: 0, iowait: 0, steal: 0, idle: 100 - cpu }
  return {
    sampledAt: new Date().toISOString(),
    intervalSeconds: 60,
    uptimeSeconds: 1000,
    load: { one: 0.1, five: 0.1, fifteen: 0.1 },
    cpu: { ...usage, cores: [] },
    memory: {
      totalBytes: 100,
      usedBytes: 10,
      freeBytes: 90,
      availableBytes: 90,
      buffersBytes: 0,
      cachedBytes: 0,
      swapTotalBytes: 0,
      swapUsedBytes: 0,
      swapFreeBytes: 0,
    },
    filesystems: Object.entries(filesystems).map(([mountpoint, usedPercent]) => ({
      device: `/dev/test${mountpoint.replace(/\W/g, '')}`,
      mountpoint,
      type: 'ext4',
      sizeBytes: 1000,
      usedBytes: usedPercent * 10,
      availableBytes: 1000 - usedPercent * 10,
      usedPercent,
    })),
    disks: [],
    network: [],
    temperatures: [],
  }
}

export class FakeMetrics {
  readonly listeners = new Set<(s: MetricsSnapshot) => void>()
  readonly sections = new Set<() => string>()
  readonly binding = bind(metricsSamples, {
    subscribe: (l: (s: MetricsSnapshot) => void) => {
      this.listeners.add(l)
      return () => this.listeners.delete(l)
    },
    addPrometheusSection: (s: () => string) => {
      this.sections.add(s)
      return () => this.sections.delete(s)
    },
  })

  emit(s: MetricsSnapshot): void {
    for (const l of this.listeners) l(s)
  }
}

export class FakeEngine {
  readonly states = new Map<string, ContainerState>()
  #onEvent: ((e: ContainerEvent) => void) | null = null
  readonly binding = bind(containerStates, {
    list: async () => [...this.states.values()],
    get: async (id: string) => this.states.get(id) ?? null,
    watch: (onEvent: (e: ContainerEvent) => void, signal: AbortSignal, onConnect?: () => void) => {
      this.#onEvent = onEvent
      signal.addEventListener('abort', () => (this.#onEvent = null))
      onConnect?.()
    },
  })

  get watched(): boolean {
    return this.#onEvent !== null
  }

  set(name: string, state: string, restartPolicy = 'always', exitCode = 0): void {
    const id = `id-${name}`
    this.states.set(id, { id, name, image: 'test', state, health: null, restartPolicy, exitCode, restartCount: 0 })
    this.#onEvent?.({ id, action: state === 'running' ? 'start' : 'die' })
  }
}
