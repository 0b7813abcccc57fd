import type Docker from 'dockerode'
import { defineError, HostdError, type TSchema } from '@hostd/sdk'
import { Value } from '@sinclair/typebox/value'
import { ALLOCATED_PORT, ENGINE_ERROR_RULES } from './engine-errors.ts'

/** Every error code this plugin answers with (listed in the README). */
export const ContainerErrors = {
  engineUnavailable: defineError('HOSTD_CONTAINERS_ENGINE_UNAVAILABLE', 503, 'No container engine is reachable'),
  notFound: defineError('HOSTD_CONTAINERS_NOT_FOUND', 404, 'No such container'),
  imageNotFound: defineError('HOSTD_CONTAINERS_IMAGE_NOT_FOUND', 404, 'No such image'),
  networkNotFound: defineError('HOSTD_CONTAINERS_NETWORK_NOT_FOUND', 404, 'No such network'),
  iconNotFound: defineError('HOSTD_CONTAINERS_ICON_NOT_FOUND', 404, 'This container has no icon'),
  invalidSpec: defineError('HOSTD_CONTAINERS_SPEC_INVALID', 400, 'Invalid run spec'),
  invalidImageReference: defineError('HOSTD_CONTAINERS_IMAGE_REFERENCE_INVALID', 400, 'Not an image reference'),
  invalidIcon: defineError('HOSTD_CONTAINERS_ICON_INVALID', 400, 'Send a PNG, JPEG or SVG icon'),
  iconTooLarge: defineError('HOSTD_CONTAINERS_ICON_TOO_LARGE', 413, 'The icon is too large'),
  needsAdmin: defineError(
    'HOSTD_CONTAINERS_SPEC_NEEDS_ADMIN',
    403,
    'This run spec reaches the host: it needs the admin role',
  ),
  hostRoot: defineError('HOSTD_CONTAINERS_HOST_ROOT_REFUSED', 403, 'Mounting the host root is refused for every role'),
  hostNamespace: defineError(
    'HOSTD_CONTAINERS_HOST_NAMESPACE_REFUSED',
    403,
    'Sharing a host namespace is refused on this engine',
  ),
  conflict: defineError('HOSTD_CONTAINERS_CONFLICT', 409, 'Conflict'),
  inUse: defineError('HOSTD_CONTAINERS_IN_USE', 409, 'In use'),
  pullFailed: defineError('HOSTD_CONTAINERS_PULL_FAILED', 502, 'The image could not be pulled'),
  engineError: defineError('HOSTD_CONTAINERS_ENGINE_ERROR', 502, 'The container engine refused the request'),
  // The engine's known errors, translated (engine-errors.ts): each message names the cause and the next step.
  portInUse: defineError('HOSTD_CONTAINERS_PORT_IN_USE', 409, 'A host port it publishes is already in use'),
  registryUnreachable: defineError(
    'HOSTD_CONTAINERS_REGISTRY_UNREACHABLE',
    502,
    'No internet connection (or the registry is unreachable)',
  ),
  registryRateLimited: defineError(
    'HOSTD_CONTAINERS_REGISTRY_RATE_LIMITED',
    429,
    'The registry refuses more pulls for now',
  ),
  nameInUse: defineError('HOSTD_CONTAINERS_NAME_IN_USE', 409, 'Another container has this name'),
  commandNotFound: defineError('HOSTD_CONTAINERS_COMMAND_NOT_FOUND', 400, 'The command is not in the image'),
  mountSourceMissing: defineError(
    'HOSTD_CONTAINERS_MOUNT_SOURCE_MISSING',
    400,
    'A host folder to mount does not exist',
  ),
  notRunning: defineError('HOSTD_CONTAINERS_NOT_RUNNING', 409, 'The container is not running'),
  execFrameInvalid: defineError('HOSTD_CONTAINERS_EXEC_FRAME_INVALID', 400, 'Not a console control frame'),
  noSpace: defineError('HOSTD_CONTAINERS_NO_SPACE', 507, "The engine's disk is full"),
  searchUnavailable: defineError(
    'HOSTD_REGISTRY_SEARCH_UNAVAILABLE',
    503,
    'The registry search index cannot be reached',
  ),
} as const

/**
 * Turns an engine (dockerode) error into one of ours: 404 stays 404, 409 stays 409, a vanished engine is 503,
 * anything else the engine refused is 502 with its own message.
 */
export function engineError(err: unknown, notFound = ContainerErrors.notFound, onLost?: () => void): HostdError {
  if (err instanceof HostdError) return err
  if (isConnectionError(err)) {
    onLost?.()
    return ContainerErrors.engineUnavailable(`The container engine stopped answering: ${(err as Error).message}`)
  }
  const status = (err as { statusCode?: number }).statusCode
  const message = engineMessage(err)
  // "No such container" stays the caller's not-found; every other known text is translated.
  const known = status === 404 && !/No such image/.test(message) ? null : translateEngineMessage(message)
  if (known) return known
  if (status === 404) return notFound(message)
  if (status === 409) return ContainerErrors.conflict(message)
  if (status === 400) return ContainerErrors.invalidSpec(message)
  return ContainerErrors.engineError(message)
}

/** The translation of an engine's raw message (engine-errors.ts), the raw text under `details.raw`; null when unknown. */
export function translateEngineMessage(raw: string): HostdError | null {
  for (const rule of ENGINE_ERROR_RULES) {
    const m = rule.pattern.exec(raw)
    if (m) return ContainerErrors[rule.error](rule.message(m, raw), undefined, { raw })
  }
  return null
}

/** `err` translated when known, else `fallback` with the raw text (the raw text kept under `details.raw` either way). */
export function translatedOr(raw: string, fallback: (message: string) => HostdError): HostdError {
  return translateEngineMessage(raw) ?? fallback(raw)
}

/**
 * A port clash between containers names the container holding the port ("Port 8082 is used by web-8082"), found by
 * one list call; any other error is returned as is.
 */
export async function explainPortOwner(docker: Docker, err: unknown, exceptId?: string): Promise<unknown> {
  if (!(err instanceof HostdError) || err.code !== ContainerErrors.portInUse.code) return err
  const port = Number(ALLOCATED_PORT.exec(String(err.details?.raw ?? ''))?.[1])
  if (!port) return err
  const list = await docker.listContainers({ all: false }).catch(() => [])
  const owner = list.find((c) => c.Id !== exceptId && (c.Ports ?? []).some((p) => p.PublicPort === port))
  if (!owner) return err
  const name = (owner.Names?.[0] ?? owner.Id.slice(0, 12)).replace(/^\//, '')
  return ContainerErrors.portInUse(
    `Port ${port} is used by ${name}: choose another host port, or stop ${name}`,
    undefined,
    err.details,
  )
}

export function engineMessage(err: unknown): string {
  const json = (err as { json?: { message?: string } }).json
  const text = json?.message ?? (err as Error).message ?? String(err)
  return text.replace(/^\(HTTP code \d+\) [a-z ]+ - /, '').trim()
}

/** True when an error means the engine itself is gone (not that it refused a request). */
export function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: string })?.code
  return (
    code === 'ECONNREFUSED' || code === 'ENOENT' || code === 'ECONNRESET' || code === 'EPIPE' || code === 'ETIMEDOUT'
  )
}

/** `value` checked against `schema` where no route schema did it (socket messages, service calls): 400 otherwise. */
export function checkedBySchema<T>(schema: TSchema, value: unknown): T {
  if (!Value.Check(schema, value)) {
    const first = [...Value.Errors(schema, value)][0]
    throw ContainerErrors.invalidSpec(`${first?.path || '/'} ${first?.message ?? 'is invalid'}`.trim())
  }
  return value as T
}
