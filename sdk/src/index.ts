/**
 * @hostd/sdk: everything a hostd plugin imports. A plugin imports nothing else of hostd.
 * The kernel API version below is what plugins name in their `kernel` range.
 */

/**
 * The plugin contract's version (semver): the minor moves with every addition to what this module exports, the
 * major with every break. sdk/CHANGELOG.md says what each version added, changed and deprecated; sdk/contract.json
 * records the exported types of this version, and a test fails when they change and this does not.
 */
export const KERNEL_API_VERSION = '1.4.0'

export { Type } from '@sinclair/typebox'
export type { Static, TSchema } from '@sinclair/typebox'
export { defineEntity, p } from '@mikro-orm/core'
export { type ErrorDetails, HostdError, defineError, errors } from './errors.ts'
export type { HostdErrorFactory } from './errors.ts'
export { ROLES, roleSatisfies, isRole } from './roles.ts'
export type { Role, RouteRole } from './roles.ts'
export { tokens, createServiceToken } from './tokens.ts'
export type {
  ServiceToken,
  Logger,
  AuditService,
  AuditEvent,
  AuditEntry,
  Actor,
  AuditActor,
  ApiTokenRef,
  Database,
  Settings,
  HelperClient,
  HelperCallOptions,
  KernelInfo,
  SessionUser,
  OptionalServices,
  KernelEvents,
  SecretSealer,
  KernelEvent,
  PluginStateEvent,
  AuditRecordEvent,
} from './tokens.ts'
export { definePlugin, isHostdPlugin, bind, PLUGIN_BRAND } from './plugin.ts'
export { Mutex } from './mutex.ts'
export type {
  HostdPlugin,
  PluginDefinition,
  DepsMap,
  ResolvedDeps,
  RouteSchema,
  RouteRequest,
  RouteHandler,
  RouteOptions,
  RouteDefinition,
  RouteRegistrar,
  RouteNeed,
  HttpMethod,
  SocketRegistrar,
  SocketOptions,
  SocketHandler,
  SocketContext,
  SocketDefinition,
  SocketAdmission,
  Condition,
  UiPage,
  UiCard,
  UiManifest,
  UiEntry,
  UiList,
  ServiceBinding,
  ServiceExposure,
  ServiceMethod,
  PluginPermissions,
  ServiceAccess,
} from './plugin.ts'
export * as conditions from './conditions.ts'
export { findDuplicateKey, findUnsafeKey, type UnsafeKey } from './json.ts'
export { sendJson, closeWithError, receiveFirstMessage } from './sockets.ts'
export { UuidSchema } from './schemas.ts'
export { auditOutcome } from './audit.ts'
export { ICON_NAMES, type IconName } from './icons.ts'
