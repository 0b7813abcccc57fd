/**
 * The containers plugin's service, as this plugin uses it. A plugin never imports another plugin's files, so the
 * part of the interface used here is declared again, and the token is made with the same id.
 */
import { createServiceToken, type AuditActor, type Role } from '@hostd/sdk'

/** The RunSpec fields a catalog entry may carry (a subset of the containers plugin's RunSpec, same names and types). */
export interface RunSpec {
  image: string
  name?: string
  command?: string | string[]
  entrypoint?: string | string[]
  ports?: string[]
  env?: Record<string, string>
  volumes?: string[]
  restartPolicy?: string
  cpus?: number
  memory?: string
  workdir?: string
  user?: string
  capAdd?: string[]
}

export interface PullProgress {
  status: string
  id?: string
  progress?: string
  current?: number
  total?: number
}

export interface CreateHooks {
  onPull?: (p: PullProgress) => void
  onPullStart?: (ref: string) => void
  onCreated?: (id: string) => void
}

export interface LabelledContainer {
  id: string
  name: string
  image: string
  state: string
  createdAt: string
  labels: Record<string, string>
  updateAvailable: boolean
}

export interface ContainersService {
  run(
    spec: RunSpec,
    role: Role,
    actor: AuditActor,
    hooks?: CreateHooks,
    options?: { labels?: Record<string, string> },
  ): Promise<{ id: string; name: string }>
  engineStatus(): Promise<{ available: boolean; message: string }>
  listLabelled(key: string): Promise<LabelledContainer[]>
  remove(
    idOrName: string,
    actor: AuditActor,
    options?: { volumes?: boolean },
  ): Promise<{ id: string; name: string; removedVolumes: string[]; keptVolumes: { name: string; reason: string }[] }>
}

export const containersService = createServiceToken<ContainersService>('hostd.containers')

/** The provenance labels the catalog sets on the containers it installs (through the service's RunOptions). */
export const LABELS = {
  app: 'dev.hostd.catalog.app',
  source: 'dev.hostd.catalog.source',
  version: 'dev.hostd.catalog.version',
} as const
