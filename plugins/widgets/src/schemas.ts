/** TypeBox shapes, one per shape: validation, serialization, types and the OpenAPI document. */
import { Type, type Static } from '@hostd/sdk'
import { LIMITS } from './limits.ts'

export { LIMITS }

export const WidgetType = Type.Union([
  Type.Literal('text'),
  Type.Literal('stat'),
  Type.Literal('list'),
  Type.Literal('progress'),
])
export const LayoutSchema = Type.Object(
  {
    x: Type.Integer({ minimum: 0, maximum: 1000 }),
    y: Type.Integer({ minimum: 0, maximum: 1000 }),
    w: Type.Integer({ minimum: 1, maximum: 100 }),
    h: Type.Integer({ minimum: 1, maximum: 100 }),
  },
  { additionalProperties: false },
)

export const OutputSchema = Type.Object({
  stdout: Type.String({ description: 'Control characters stripped except \\n and \\t' }),
  stderr: Type.String(),
  exitCode: Type.Union([Type.Integer(), Type.Null()], {
    description: 'null when the script was ended by a signal or did not start',
  }),
  ranAt: Type.String({ description: 'ISO time the run started' }),
  durationMs: Type.Integer(),
  truncated: Type.Boolean({ description: 'Output passed 64 KiB: the script was killed and the output cut' }),
  timedOut: Type.Boolean({ description: 'The script ran past its timeout and was killed with its process group' }),
  error: Type.Union([Type.String(), Type.Null()], {
    description: "Why hostd could not run it (the script's own failures are in exitCode/stderr)",
  }),
})
export type Output = Static<typeof OutputSchema>

const Title = Type.String({ minLength: 1, maxLength: LIMITS.title })
const Script = Type.String({ minLength: 1, maxLength: LIMITS.script })
const Refresh = Type.Integer({ minimum: LIMITS.refreshSeconds.min, maximum: LIMITS.refreshSeconds.max })
const Timeout = Type.Integer({ minimum: LIMITS.timeoutSeconds.min, maximum: LIMITS.timeoutSeconds.max })

/** A widget as answered. `script` is present only in answers to admins. */
export const WidgetSchema = Type.Object({
  id: Type.String(),
  title: Type.String(),
  type: WidgetType,
  script: Type.Optional(Type.String({ description: 'Only in answers to admins' })),
  refreshSeconds: Type.Integer(),
  timeoutSeconds: Type.Integer(),
  layout: Type.Union([LayoutSchema, Type.Null()]),
  output: Type.Union([OutputSchema, Type.Null()], { description: 'The last run, or null before the first' }),
  running: Type.Boolean(),
})
export type WidgetView = Static<typeof WidgetSchema>

export const RunnerStatusSchema = Type.Object({
  available: Type.Boolean(),
  reason: Type.String({ description: 'Why scripts cannot run (empty when they can)' }),
})
export type RunnerStatus = Static<typeof RunnerStatusSchema>

export const WidgetListSchema = Type.Object({ items: Type.Array(WidgetSchema), runner: RunnerStatusSchema })

export const WidgetCreateSchema = Type.Object(
  {
    title: Title,
    type: WidgetType,
    script: Script,
    refreshSeconds: Type.Optional(Refresh),
    timeoutSeconds: Type.Optional(Timeout),
    layout: Type.Optional(Type.Union([LayoutSchema, Type.Null()])),
  },
  { additionalProperties: false },
)
export type WidgetCreate = Static<typeof WidgetCreateSchema>

export const WidgetUpdateSchema = Type.Object(
  {
    title: Type.Optional(Title),
    type: Type.Optional(WidgetType),
    script: Type.Optional(Script),
    refreshSeconds: Type.Optional(Refresh),
    timeoutSeconds: Type.Optional(Timeout),
    layout: Type.Optional(Type.Union([LayoutSchema, Type.Null()])),
  },
  { additionalProperties: false },
)
export type WidgetUpdate = Static<typeof WidgetUpdateSchema>

export const IdParams = Type.Object({ id: Type.String({ pattern: '^[0-9a-f-]{36}$' }) })

/** A widget as stored (never answered as is). */
export interface StoredWidget {
  id: string
  title: string
  type: 'text' | 'stat' | 'list' | 'progress'
  script: string
  refreshSeconds: number
  timeoutSeconds: number
  layout: Static<typeof LayoutSchema> | null
}
