/**
 * Container states for other plugins (the alerts plugin): one container's state, health, restart policy and exit
 * code, every container's, and the engine's container events as they happen (no polling), reconnecting when the
 * engine goes away and comes back.
 */
import type { ContainerEvent, ContainerState } from '../api.ts'
import type { Engine } from './engine.ts'

const RECONNECT_MS = 2_000

interface Inspected {
  Id?: string
  Name?: string
  Config?: { Image?: string }
  State?: { Status?: string; ExitCode?: number; Health?: { Status?: string } }
  HostConfig?: { RestartPolicy?: { Name?: string } }
  RestartCount?: number
}

function toState(c: Inspected): ContainerState {
  const health = c.State?.Health?.Status
  return {
    id: c.Id ?? '',
    name: (c.Name ?? '').replace(/^\//, ''),
    image: c.Config?.Image ?? '',
    state: c.State?.Status ?? 'unknown',
    health: health === 'healthy' || health === 'unhealthy' || health === 'starting' ? health : null,
    restartPolicy: c.HostConfig?.RestartPolicy?.Name || 'no',
    exitCode: typeof c.State?.ExitCode === 'number' ? c.State.ExitCode : null,
    restartCount: c.RestartCount ?? 0,
  }
}

/** One container's state, or null when it does not exist or no engine answers. */
export async function containerState(engine: Engine, id: string): Promise<ContainerState | null> {
  const found = await engine.find()
  if (!found) return null
  try {
    return toState((await found.docker.getContainer(id).inspect()) as Inspected)
  } catch {
    return null
  }
}

/** Every container's state (running or not); `[]` when no engine answers. */
export async function containerStates(engine: Engine): Promise<ContainerState[]> {
  const found = await engine.find()
  if (!found) return []
  const list = await found.docker.listContainers({ all: true }).catch(() => [])
  const states = await Promise.all(list.map((c) => containerState(engine, c.Id)))
  return states.filter((s): s is ContainerState => s !== null)
}

/**
 * The engine's container events until `signal` aborts; `onConnect` runs at each (re)connection. `since` (unix seconds,
 * asked at each connection): the engine first replays the events from then on, so none made before the stream was
 * open is lost.
 */
export function watchContainerEvents(
  engine: Engine,
  onEvent: (event: ContainerEvent) => void,
  signal: AbortSignal,
  onConnect?: () => void,
  since?: () => number | undefined,
): void {
  const loop = async () => {
    while (!signal.aborted) {
      const found = await engine.find()
      if (found) {
        try {
          const from = since?.()
          const stream = (await found.docker.getEvents({
            filters: { type: ['container'] },
            ...(from === undefined ? {} : { since: String(Math.floor(from)) }),
            abortSignal: signal,
          } as never)) as unknown as NodeJS.ReadableStream & { destroy(): void }
          const stop = () => stream.destroy()
          // Aborted while the stream was being opened: an 'abort' listener added now would never run.
          if (signal.aborted) {
            stop()
            return
          }
          signal.addEventListener('abort', stop, { once: true })
          onConnect?.()
          let buffered = ''
          for await (const chunk of stream) {
            buffered += chunk.toString()
            let nl = buffered.indexOf('\n')
            while (nl >= 0) {
              const line = buffered.slice(0, nl)
              buffered = buffered.slice(nl + 1)
              nl = buffered.indexOf('\n')
              try {
                const e = JSON.parse(line) as { id?: string; Action?: string; Actor?: { ID?: string } }
                const id = e.Actor?.ID ?? e.id
                if (id && e.Action) onEvent({ id, action: e.Action })
              } catch {
                // Not a JSON line: skipped.
              }
            }
          }
          signal.removeEventListener('abort', stop)
        } catch {
          // The engine went away: look for it again below.
        }
        if (!signal.aborted) engine.lost()
      }
      if (signal.aborted) return
      await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS).unref())
    }
  }
  void loop()
}
