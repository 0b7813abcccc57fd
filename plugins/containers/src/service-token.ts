/**
 * The service this plugin provides to plugins that declare `dependsOn: { containers: '^1.0.0' }` (the catalog):
 * create a container from a RunSpec through the one validated path (role rules, host-root refusal, audit).
 * A plugin cannot import this file; it makes its own token with the same id: createServiceToken('hostd.containers').
 */
import { createServiceToken, type Role } from '@hostd/sdk'
import type { RunSpec } from './runspec.ts'
import type { AuditActor } from './runtime.ts'
import type { CreateHooks } from './create.ts'
import type { EngineStatus } from './engine.ts'

export interface ContainersService {
  /** Validates `spec` for `role` (403/400 as the REST route), pulls if missing, creates, starts; audited. */
  run(spec: RunSpec, role: Role, actor: AuditActor, hooks?: CreateHooks): Promise<{ id: string; name: string }>
  engineStatus(): Promise<EngineStatus>
}

export const containersService = createServiceToken<ContainersService>('hostd.containers')
