import { Type, type Static } from '@hostd/sdk'

/** One schema per shape: validation, response serialization, handler types and the OpenAPI document. */

const Percent = Type.Number({ description: 'percent, 0-100' })

export const CpuUsageSchema = Type.Object({
  usage: Percent,
  user: Percent,
  system: Percent,
  iowait: Percent,
  steal: Percent,
  idle: Percent,
})
export type CpuUsage = Static<typeof CpuUsageSchema>

export const MetricsSnapshotSchema = Type.Object({
  sampledAt: Type.String({ format: 'date-time' }),
  intervalSeconds: Type.Number({ description: 'seconds the rates are measured over' }),
  uptimeSeconds: Type.Integer(),
  load: Type.Object({ one: Type.Number(), five: Type.Number(), fifteen: Type.Number() }),
  cpu: Type.Object({
    ...CpuUsageSchema.properties,
    cores: Type.Array(Type.Object({ core: Type.Integer(), ...CpuUsageSchema.properties })),
  }),
  memory: Type.Object({
    totalBytes: Type.Number(),
    usedBytes: Type.Number(),
    freeBytes: Type.Number(),
    availableBytes: Type.Number(),
    buffersBytes: Type.Number(),
    cachedBytes: Type.Number(),
    swapTotalBytes: Type.Number(),
    swapUsedBytes: Type.Number(),
    swapFreeBytes: Type.Number(),
  }),
  filesystems: Type.Array(
    Type.Object({
      device: Type.String(),
      mountpoint: Type.String(),
      type: Type.String(),
      sizeBytes: Type.Number(),
      usedBytes: Type.Number(),
      availableBytes: Type.Number(),
      usedPercent: Percent,
    }),
  ),
  disks: Type.Array(
    Type.Object({
      name: Type.String(),
      readBytesPerSec: Type.Number(),
      writeBytesPerSec: Type.Number(),
      readsPerSec: Type.Number(),
      writesPerSec: Type.Number(),
    }),
  ),
  network: Type.Array(
    Type.Object({
      name: Type.String(),
      rxBytesPerSec: Type.Number(),
      txBytesPerSec: Type.Number(),
      rxPacketsPerSec: Type.Number(),
      txPacketsPerSec: Type.Number(),
    }),
  ),
  temperatures: Type.Array(Type.Object({ sensor: Type.String(), label: Type.String(), celsius: Type.Number() })),
})
export type MetricsSnapshot = Static<typeof MetricsSnapshotSchema>

export const HistoryPointSchema = Type.Object({
  t: Type.String({ format: 'date-time' }),
  cpu: Percent,
  iowait: Percent,
  load1: Type.Number(),
  memUsedBytes: Type.Number(),
  memTotalBytes: Type.Number(),
  swapUsedBytes: Type.Number(),
  diskReadBytesPerSec: Type.Number(),
  diskWriteBytesPerSec: Type.Number(),
  netRxBytesPerSec: Type.Number(),
  netTxBytesPerSec: Type.Number(),
  maxTempCelsius: Type.Union([Type.Number(), Type.Null()]),
})
export type HistoryPoint = Static<typeof HistoryPointSchema>

export const HistoryRangeSchema = Type.Union([Type.Literal('1h'), Type.Literal('24h'), Type.Literal('7d')])
export type HistoryRange = Static<typeof HistoryRangeSchema>

export const HistoryQuerySchema = Type.Object({ range: Type.Optional(HistoryRangeSchema) })

export const HistoryResponseSchema = Type.Object({
  range: HistoryRangeSchema,
  /** Nominal step of the points; 1h mixes 2 s points with 60 s points where nobody streamed. */
  stepSeconds: Type.Integer(),
  points: Type.Array(Type.Object({ ...HistoryPointSchema.properties, stepSeconds: Type.Integer() })),
})
export type HistoryResponse = Static<typeof HistoryResponseSchema>

export const StreamQuerySchema = Type.Object({
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 100_000, description: 'end the stream after this many events' }),
  ),
})

export const ProcessSchema = Type.Object({
  pid: Type.Integer(),
  name: Type.String({
    description: "the program's name: argv[0]'s last part, or the title it set; comm for kernel threads",
  }),
  command: Type.String({ description: 'the command line, arguments joined by spaces (at most 512 characters)' }),
  user: Type.String(),
  cpu: Type.Number({ description: 'percent of one core since the previous call' }),
  memory: Type.Number({ description: 'resident memory, percent of physical memory' }),
  threads: Type.Integer(),
  diskReadRate: Type.Number({ description: 'bytes per second' }),
  diskWriteRate: Type.Number({ description: 'bytes per second' }),
  netInRate: Type.Number({ description: 'bytes per second (network=1 only)' }),
  netOutRate: Type.Number({ description: 'bytes per second (network=1 only)' }),
  wakeupsRate: Type.Number({ description: 'context switches per second' }),
})
export type ProcessEntry = Static<typeof ProcessSchema>

export const ProcessSampleSchema = Type.Object({
  sampledAt: Type.String({ format: 'date-time' }),
  processes: Type.Array(ProcessSchema),
})
export type ProcessSample = Static<typeof ProcessSampleSchema>

export const ProcessQuerySchema = Type.Object({
  network: Type.Optional(
    Type.Union([Type.Literal('1'), Type.Literal('true')], {
      description: 'add per-process network rates (needs the root helper)',
    }),
  ),
})

export const ProcessSignalSchema = Type.Union([Type.Literal('TERM'), Type.Literal('KILL')], {
  description: 'TERM asks the process to end (it may tidy up first); KILL ends it at once',
})
export type ProcessSignal = Static<typeof ProcessSignalSchema>
export const ProcessSignalParamsSchema = Type.Object({ pid: Type.Integer({ minimum: 1, maximum: 4194304 }) })
export const ProcessSignalBodySchema = Type.Object({ signal: ProcessSignalSchema }, { additionalProperties: false })
export const ProcessSignalResultSchema = Type.Object({
  pid: Type.Integer(),
  name: Type.String(),
  signal: ProcessSignalSchema,
  dryRun: Type.Boolean({ description: 'The root helper runs in dry-run mode: nothing was sent' }),
  argv: Type.Optional(Type.Array(Type.String(), { description: 'In dry-run mode: what the helper would have run' })),
})
export type ProcessSignalResult = Static<typeof ProcessSignalResultSchema>

export const PrometheusSchema = Type.String({ description: 'Prometheus text exposition format 0.0.4' })
