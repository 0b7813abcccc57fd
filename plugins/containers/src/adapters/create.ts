/**
 * From a validated spec to a running container: pull the image when it is missing, create, start.
 * Pull progress goes to an optional callback (the install socket streams it).
 */
import type Docker from 'dockerode'
import type { ContainerCreateOptions } from 'dockerode'
import type { CreateHooks, PullProgress } from '../api.ts'
import { ContainerErrors, engineError, engineMessage, explainPortOwner, translatedOr } from '../errors.ts'
import { capabilityName } from '../policy.ts'
import type { NormalizedSpec } from '../runspec.ts'

/** Docker's create options for the spec. */
export function createOptions(spec: NormalizedSpec): ContainerCreateOptions {
  const exposed: Record<string, Record<string, never>> = {} // Docker's ExposedPorts: each port maps to an empty object
  const bindings: Record<string, { HostIp: string; HostPort: string }[]> = {}
  for (const p of spec.ports) {
    const key = `${p.containerPort}/${p.proto}`
    exposed[key] = {}
    ;(bindings[key] ??= []).push({ HostIp: p.hostAddress, HostPort: p.hostPort ? String(p.hostPort) : '' })
  }
  const restart = spec.restartPolicy ? spec.restartPolicy.split(':') : undefined
  return {
    name: spec.name,
    Image: spec.image,
    Cmd: spec.command,
    Entrypoint: spec.entrypoint,
    Env: spec.env.length ? spec.env : undefined,
    WorkingDir: spec.workdir,
    User: spec.user,
    Hostname: spec.hostname,
    Labels: spec.labels,
    ExposedPorts: exposed,
    ...(spec.healthcheck
      ? {
          Healthcheck: {
            Test: spec.healthcheck.test,
            Interval: spec.healthcheck.interval,
            Timeout: spec.healthcheck.timeout,
            Retries: spec.healthcheck.retries,
            StartPeriod: spec.healthcheck.startPeriod,
          },
        }
      : {}),
    ...(spec.stopTimeout !== undefined ? { StopTimeout: spec.stopTimeout } : {}),
    ...(spec.stopSignal ? { StopSignal: spec.stopSignal } : {}),
    ...(spec.network && spec.aliases?.length
      ? { NetworkingConfig: { EndpointsConfig: { [spec.network]: { Aliases: spec.aliases } } } }
      : {}),
    HostConfig: {
      ...(spec.cgroupnsMode ? { CgroupnsMode: spec.cgroupnsMode } : {}),
      PortBindings: bindings,
      Binds: spec.volumes.map((v) =>
        [v.source, v.target, ...(v.options.length ? [v.options.join(',')] : [])].join(':'),
      ),
      Mounts: spec.mounts.map((m) => ({
        Type: m.type,
        Source: m.source || undefined,
        Target: m.target,
        ReadOnly: m.readOnly,
      })),
      Tmpfs: spec.tmpfs,
      Devices: spec.devices.map((d) => ({
        PathOnHost: d.host,
        PathInContainer: d.container,
        CgroupPermissions: d.permissions,
      })),
      NanoCpus: spec.cpus ? Math.round(spec.cpus * 1e9) : undefined,
      Memory: spec.memory,
      NetworkMode: spec.network,
      CapAdd: spec.capAdd.map(capabilityName),
      CapDrop: spec.capDrop.map(capabilityName),
      Dns: spec.dns,
      ExtraHosts: spec.extraHosts,
      RestartPolicy: restart
        ? { Name: restart[0]!, MaximumRetryCount: restart[1] ? Number(restart[1]) : 0 }
        : undefined,
      Privileged: spec.privileged,
      PidMode: spec.pidMode,
      IpcMode: spec.ipcMode,
      UTSMode: spec.utsMode,
      UsernsMode: spec.usernsMode,
      SecurityOpt: spec.securityOpt,
      ReadonlyRootfs: spec.readOnly,
      Init: spec.init || undefined,
      ShmSize: spec.shmSize,
    } as ContainerCreateOptions['HostConfig'],
  }
}

/**
 * Pulls `ref`, reading the engine's JSON progress lines one at a time (a line longer than 64 KiB is an error,
 * so memory stays bounded). Throws 502 HOSTD_CONTAINERS_PULL_FAILED with the engine's message.
 */
export async function pullImage(docker: Docker, ref: string, onProgress?: (p: PullProgress) => void): Promise<void> {
  let stream: NodeJS.ReadableStream
  try {
    stream = await docker.pull(ref)
  } catch (err) {
    const status = (err as { statusCode?: number }).statusCode
    if (status === 404 || status === 500 || status === 400)
      throw translatedOr(engineMessage(err), (raw) => ContainerErrors.pullFailed(`Pulling ${ref} failed: ${raw}`))
    throw engineError(err)
  }
  let buffer = ''
  let failure: string | null = null
  await new Promise<void>((resolve, reject) => {
    stream.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8')
      if (buffer.length > 65536 && !buffer.includes('\n'))
        return reject(ContainerErrors.pullFailed('The engine sent an oversized progress line'))
      let nl: number
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl).trim()
        buffer = buffer.slice(nl + 1)
        if (!line) continue
        try {
          const event = JSON.parse(line) as {
            status?: string
            id?: string
            progress?: string
            progressDetail?: { current?: number; total?: number }
            error?: string
            errorDetail?: { message?: string }
          }
          if (event.error) failure = event.errorDetail?.message ?? event.error
          else
            onProgress?.({
              status: event.status ?? '',
              id: event.id,
              progress: event.progress,
              current: event.progressDetail?.current,
              total: event.progressDetail?.total,
            })
        } catch {
          // A line that is not JSON is not progress; skip it.
        }
      }
    })
    stream.on('end', resolve)
    stream.on('close', resolve)
    stream.on('error', reject)
  })
  if (failure) throw translatedOr(failure, (raw) => ContainerErrors.pullFailed(`Pulling ${ref} failed: ${raw}`))
}

export async function imageExists(docker: Docker, ref: string): Promise<boolean> {
  try {
    await docker.getImage(ref).inspect()
    return true
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return false
    throw engineError(err)
  }
}

/**
 * Pull if missing, create, `verify` (if given), start. Returns the new container's id. A container that fails the
 * check or fails to start is removed.
 */
export async function createAndStart(
  docker: Docker,
  spec: NormalizedSpec,
  hooks: CreateHooks = {},
  verify?: (created: Docker.Container) => Promise<unknown>,
): Promise<{ id: string; pulled: boolean }> {
  let pulled = false
  if (!(await imageExists(docker, spec.image))) {
    hooks.onPullStart?.(spec.image)
    await pullImage(docker, spec.image, hooks.onPull)
    pulled = true
  }
  let container: Docker.Container
  try {
    container = await docker.createContainer(createOptions(spec))
  } catch (err) {
    throw engineError(err, ContainerErrors.imageNotFound)
  }
  if (verify) {
    try {
      await verify(container)
    } catch (err) {
      await container.remove({ force: true }).catch(() => undefined)
      throw err
    }
  }
  hooks.onCreated?.(container.id)
  try {
    // An engine before API 1.44 takes one network at create: the others are joined before the start.
    for (const net of spec.moreNetworks ?? [])
      await docker.getNetwork(net.name).connect({ Container: container.id, EndpointConfig: { Aliases: net.aliases } })
  } catch (err) {
    await container.remove({ force: true }).catch(() => undefined)
    throw engineError(err, ContainerErrors.networkNotFound)
  }
  try {
    await container.start()
  } catch (err) {
    await container.remove({ force: true }).catch(() => undefined)
    throw await explainPortOwner(
      docker,
      translatedOr(engineMessage(err), (raw) =>
        ContainerErrors.engineError(`The container was created but failed to start: ${raw}`),
      ),
      container.id,
    )
  }
  return { id: container.id, pulled }
}
