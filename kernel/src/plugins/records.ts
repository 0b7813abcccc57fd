import { basename, relative, sep } from 'node:path'
import type { FastifyInstance } from 'fastify'
import type { WebSocket } from 'ws'
import type { HostdPlugin, Role, RouteDefinition, RouteRole, ServiceBinding, SocketDefinition } from '@hostd/sdk'
import { uiInfo, type UiInfo } from '../ui/manifest.ts'

/**
 * `starting`: being imported or started (its routes answer 503 HOSTD_PLUGIN_STARTING meanwhile). `restarting`: an
 * isolated plugin whose process ended, waiting to be started again (`reason` says why; its routes answer 503).
 */
export type PluginState = 'starting' | 'active' | 'restarting' | 'disabled' | 'unavailable' | 'failed'

/** A definition's `provides`, `start` and `stop` with one load's deps and setup result bound. */
export interface LoadHooks {
  provides(): Promise<ServiceBinding[]>
  start(): Promise<void>
  stop(): Promise<void>
}

/** One loaded version of a plugin, and what it runs while active. */
export interface PluginRuntime {
  app: FastifyInstance
  routes: RouteDefinition[]
  sockets: SocketDefinition[]
  openSockets: Set<WebSocket>
  inflight: number
  provided: string[]
  /** Set once `start` has been called (even if it threw): only then does `stop` run. */
  started: boolean
  /** Aborted when this version stops: sockets and plugin work listen to it. */
  lifetime: AbortController
  /** What the definition's `setup` returned for this load (undefined without one). */
  state: unknown
  hooks: LoadHooks
  /** Run once the load has stopped (after `stop`): what the kernel opened for it, like a plugin's own database. */
  closers: (() => Promise<void>)[]
}

export interface PluginRecord {
  /** The definition's id, or the folder name when the definition could not be read. */
  id: string
  /** Folder the plugin was loaded from; null for a definition handed over in-process (tests). */
  dir: string | null
  builtin: boolean
  fingerprint: string
  definition: HostdPlugin | null
  state: PluginState
  /** Why unavailable, or the error that failed it. */
  reason: string | null
  /** Where the error that failed it came from: `file:line` in the plugin, or its entry for a missed deadline. */
  origin: string | null
  /** The entry file its package names (null for a definition handed over in-process, or no readable package). */
  entry: string | null
  /** The version its package.json states (listed for a version that failed before its definition was read). */
  packageVersion: string | null
  /** What the kernel noticed about this load (a version mismatch, an upgrade that failed to migrate), listed with the definition's. */
  warnings: string[]
  /** 'dependency' when unavailable because another plugin is not active: settled again on every change. */
  waitingOn: 'dependency' | 'condition' | null
  conditionsCheckedAt: number
  runtime: PluginRuntime | null
}

/** A plugin as `GET /api/extensions` lists it. */
export interface ExtensionInfo {
  id: string
  version: string | null
  description: string | null
  state: PluginState
  reason?: string
  error?: string
  /** Where `error` came from (`file:line`, or the plugin's entry when a call missed its deadline), when known. */
  errorOrigin?: string
  /** What the definition uses of an older contract shape, and what to change (absent when nothing). */
  warnings?: string[]
  builtin: boolean
  /** What it adds to the web UI while active, filtered by the caller's role; null when nothing. */
  ui: UiInfo | null
  /** The routes it serves, with their methods and roles; null while it is not running (known once it starts). */
  routes: RouteInfo[] | null
  /** The sockets it serves, with their roles; null while it is not running. */
  sockets: SocketInfo[] | null
}

/** One route of a running plugin, as `GET /api/extensions` lists it. */
export interface RouteInfo {
  method: string
  path: string
  role: RouteRole
  /** Only a signed-in session may call it, never an API token. */
  sessionOnly: boolean
}

/** One socket of a running plugin, as `GET /api/extensions` lists it. */
export interface SocketInfo {
  path: string
  role: Exclude<RouteRole, 'public'>
  sessionOnly: boolean
}

/** An active plugin and its runtime, as the routing tables see it. */
export interface Serving {
  record: PluginRecord
  runtime: PluginRuntime
}

export interface SocketTarget {
  record: PluginRecord
  def: SocketDefinition
}

export function newRecord(
  key: string,
  dir: string | null,
  builtin: boolean,
  print: string,
  definition: HostdPlugin | null,
): PluginRecord {
  return {
    id: definition?.id ?? basename(key),
    dir,
    builtin,
    fingerprint: print,
    definition,
    state: 'failed',
    reason: null,
    origin: null,
    entry: null,
    packageVersion: null,
    warnings: [],
    waitingOn: null,
    conditionsCheckedAt: 0,
    runtime: null,
  }
}

/** Marks a plugin unavailable until another plugin it needs is active (settled again on every change). */
export function awaitDependency(record: PluginRecord, reason: string): void {
  record.state = 'unavailable'
  record.reason = reason
  record.waitingOn = 'dependency'
}

/** A folder the registry is importing for the first time: listed as `starting`, not yet a plugin anybody can find. */
export const isPlaceholder = (record: PluginRecord): boolean =>
  record.definition === null && record.state === 'starting'

/** Where the registry keeps a record: its folder, or `inline:<id>` for a definition handed over in-process. */
export const recordKey = (record: PluginRecord): string => record.dir ?? `inline:${record.id}`

/**
 * `file:line` relative to the plugin's folder, as its author reads it: the host's paths (the data dir, the plugins
 * dir) are not for every viewer. The log and the audit record keep the full path for the admin.
 */
function shownOrigin(record: PluginRecord): string {
  const origin = record.origin!
  return record.dir && origin.startsWith(record.dir + sep) ? relative(record.dir, origin) : origin
}

/**
 * A record as `GET /api/extensions` lists it, its UI filtered for `role`. With `dev` (HOSTD_DEV=1), a third-party
 * plugin's module URLs carry its load's revision, so an open page imports a module again when its files change.
 */
export function extensionInfo(record: PluginRecord, role: Role, dev = false): ExtensionInfo {
  const warnings = [...(record.definition?.warnings ?? []), ...record.warnings]
  return {
    id: record.id,
    version: record.definition?.version ?? record.packageVersion,
    description: record.definition?.description ?? null,
    state: record.state,
    ...((record.state === 'unavailable' || record.state === 'restarting') && record.reason
      ? { reason: record.reason }
      : {}),
    ...(record.state === 'failed' && record.reason ? { error: record.reason } : {}),
    ...(record.state === 'failed' && record.origin ? { errorOrigin: shownOrigin(record) } : {}),
    ...(warnings.length > 0 ? { warnings: [...warnings] } : {}),
    builtin: record.builtin,
    ui: uiInfo(record, record.state, role, dev && !record.builtin ? record.fingerprint.slice(0, 12) || null : null),
    routes:
      record.runtime?.routes.map((r) => ({
        method: r.method,
        path: r.path,
        role: r.options.role,
        sessionOnly: r.options.sessionOnly === true,
      })) ?? null,
    sockets:
      record.runtime?.sockets.map((s) => ({
        path: s.path,
        role: s.options.role,
        sessionOnly: s.options.sessionOnly === true,
      })) ?? null,
  }
}
