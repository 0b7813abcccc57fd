/**
 * The RunSpec: its schema (strict: unknown fields are 400), and the one flat spec every creating path (REST,
 * install socket, catalog, update) turns it into (runspec/normalize.ts), validates with the same role rules
 * (policy.ts) and creates from (adapters/create.ts).
 */
import { Type, type Static } from '@hostd/sdk'
import { ImageReferenceSchema } from './image-reference.ts'

const Str = (max = 4096) => Type.String({ maxLength: max })
const StrList = (max = 256) => Type.Array(Str(), { maxItems: max })

export const PortSpecSchema = Type.Union([
  Type.String({ maxLength: 128, description: '[hostAddress:][hostPort:]containerPort[/proto], like docker run -p' }),
  Type.Object(
    {
      hostAddress: Type.Optional(Str(64)),
      hostPort: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
      containerPort: Type.Integer({ minimum: 1, maximum: 65535 }),
      proto: Type.Optional(Type.Union([Type.Literal('tcp'), Type.Literal('udp'), Type.Literal('sctp')])),
    },
    { additionalProperties: false },
  ),
])

export const VolumeSpecSchema = Type.Union([
  Type.String({
    maxLength: 4096,
    description:
      'source:target[:options], like docker run -v (options: ro, rw, z, Z, nocopy, a propagation or consistency ' +
      'mode, comma-separated); a source starting with / is a host path',
  }),
  Type.Object(
    {
      source: Str(),
      target: Str(),
      readOnly: Type.Optional(Type.Boolean()),
    },
    { additionalProperties: false },
  ),
])

export const MountSpecSchema = Type.Object(
  {
    type: Type.Union([Type.Literal('bind'), Type.Literal('volume'), Type.Literal('tmpfs')]),
    source: Type.Optional(Str()),
    target: Str(),
    readOnly: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)

export const RunSpecSchema = Type.Object(
  {
    image: ImageReferenceSchema,
    name: Type.Optional(Type.String({ pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$' })),
    command: Type.Optional(
      Type.Union([Str(16384), StrList(1024)], {
        description: 'a string split into words like a shell would (quotes, backslashes; no expansion), or an array',
      }),
    ),
    ports: Type.Optional(Type.Array(PortSpecSchema, { maxItems: 256 })),
    env: Type.Optional(
      Type.Union([Type.Record(Type.String({ pattern: '^[^=\\u0000]+$' }), Str(32768)), StrList(1024)]),
    ),
    volumes: Type.Optional(Type.Array(VolumeSpecSchema, { maxItems: 256 })),
    cpus: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1024 })),
    memory: Type.Optional(
      Type.Union(
        [
          Type.Integer({ minimum: 6 * 1024 * 1024, maximum: Number.MAX_SAFE_INTEGER }),
          Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?[bkmgBKMG]?$' }),
        ],
        { description: 'bytes, or a docker-style size such as 512m' },
      ),
    ),
    workdir: Type.Optional(Str(4096)),
    network: Type.Optional(Type.String({ maxLength: 256 })),
    restartPolicy: Type.Optional(Type.String({ pattern: '^(no|always|unless-stopped|on-failure(:[0-9]+)?)$' })),
    entrypoint: Type.Optional(Type.Union([Str(16384), StrList(1024)])),
    user: Type.Optional(Type.String({ maxLength: 256 })),
    capAdd: Type.Optional(StrList(64)),
    dns: Type.Optional(StrList(16)),
    mounts: Type.Optional(Type.Array(MountSpecSchema, { maxItems: 256 })),
    tmpfs: Type.Optional(StrList(64)),
    devices: Type.Optional(StrList(64)),
    extraArgs: Type.Optional(
      Type.Union([Str(16384), StrList(256)], { description: 'docker run flags (allowlisted), string or array' }),
    ),
  },
  { additionalProperties: false },
)
export type RunSpec = Static<typeof RunSpecSchema>

export interface PortBinding {
  hostAddress: string
  hostPort: number
  containerPort: number
  proto: string
}
export interface VolumeBinding {
  source: string
  target: string
  /** The -v options exactly as given (ro, rw, z, Z, nocopy, propagation, consistency), passed on as they are. */
  options: string[]
  /** A host path (starts with / or .) rather than a named volume. */
  hostPath: boolean
}
export interface MountBinding {
  type: 'bind' | 'volume' | 'tmpfs'
  source: string
  target: string
  readOnly: boolean
}

/** The one flat spec every path validates and creates from. */
export interface NormalizedSpec {
  image: string
  name?: string
  command?: string[]
  entrypoint?: string[]
  ports: PortBinding[]
  env: string[]
  volumes: VolumeBinding[]
  mounts: MountBinding[]
  tmpfs: Record<string, string>
  devices: { host: string; container: string; permissions: string }[]
  cpus?: number
  memory?: number
  workdir?: string
  network?: string
  restartPolicy?: string
  user?: string
  capAdd: string[]
  capDrop: string[]
  dns: string[]
  labels: Record<string, string>
  hostname?: string
  extraHosts: string[]
  privileged: boolean
  pidMode?: string
  ipcMode?: string
  utsMode?: string
  usernsMode?: string
  cgroupnsMode?: string
  securityOpt: string[]
  readOnly: boolean
  init: boolean
  shmSize?: number
  /** The spec carried extraArgs (admin only, whatever they hold). */
  hadExtraArgs: boolean
  /** Set by a calling plugin's RunOptions only (the stacks plugin): they do not reach the host. */
  healthcheck?: { test: string[]; interval?: number; timeout?: number; retries?: number; startPeriod?: number }
  aliases?: string[]
  moreNetworks?: { name: string; aliases?: string[] }[]
  stopTimeout?: number
  stopSignal?: string
}
