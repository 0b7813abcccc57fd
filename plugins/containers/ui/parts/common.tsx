/** Pieces every containers view shares: icons, state badges, port links, the engine's absence, pulls. */
import { signal } from '@preact/signals'
import type { ComponentChildren } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { Badge, Button, Empty, Icon, type PageContext, type ProgressItem } from '@hostd/ui'
import {
  healthTone,
  portText,
  portUrl,
  stateTone,
  uniquePorts,
  type Container,
  type EngineStatus,
  type PullMessage,
} from './model.ts'

/** Bumped when an icon changes, so every <img> of that container asks again. */
const iconVersions = signal<Record<string, number>>({})
export function iconChanged(name: string): void {
  iconVersions.value = { ...iconVersions.value, [name]: (iconVersions.value[name] ?? 0) + 1 }
}

/**
 * The container's icon (GET /api/icons/container/{name}), or a box when it has none. Decorative: the name is beside it.
 * `known`: whether the server says it has one (the list's `hasIcon`); false shows the box without asking, unless the
 * icon was changed on this page since.
 */
export function ContainerIcon({ name, size = 32, known }: { name: string; size?: number; known?: boolean }) {
  const version = iconVersions.value[name] ?? 0
  const [missing, setMissing] = useState(false)
  useEffect(() => setMissing(false), [name, version])
  const style = { width: `${size}px`, height: `${size}px` }
  if (missing || (known === false && version === 0)) {
    return (
      <span class="ctr-icon ctr-icon-fallback" style={style} aria-hidden="true">
        <Icon name="box" size={Math.round(size * 0.55)} />
      </span>
    )
  }
  const src = `/api/icons/container/${encodeURIComponent(name)}${version ? `?v=${version}` : ''}`
  return <img class="ctr-icon" style={style} src={src} alt="" onError={() => setMissing(true)} />
}

export function StateBadges({ state, health }: { state: string; health?: string }) {
  return (
    <span class="ctr-badges">
      <Badge tone={stateTone(state)}>{state}</Badge>
      {health && <Badge tone={healthTone(health)}>{health}</Badge>}
    </span>
  )
}

/** Published ports: TCP ones as links to the port on the host this dashboard was opened with. */
export function PortLinks({ ports, name }: { ports: Container['ports']; name: string }) {
  const list = uniquePorts(ports)
  if (list.length === 0) return <span class="muted">none</span>
  return (
    <ul class="ctr-ports" aria-label={`Published ports of ${name}`}>
      {list.map((p) => {
        const url = portUrl(p)
        const text = portText(p)
        return (
          <li key={text}>
            {url ? (
              <a href={url} target="_blank" rel="noopener noreferrer">
                {text}
                <span class="sr-only">
                  {' '}
                  (port {p.hostPort} of {name}, opens a new tab)
                </span>{' '}
                <Icon name="external-link" size={12} />
              </a>
            ) : (
              <span class="mono">{text}</span>
            )}
          </li>
        )
      })}
    </ul>
  )
}

/** The engine cannot be reached: say what was tried and what to do, instead of an empty table. */
export function EngineUnavailable({ engine, onRetry }: { engine: EngineStatus; onRetry: () => void }) {
  return (
    <div role="status">
      <Empty
        icon="server"
        title="No container engine is reachable"
        action={
          <Button icon="refresh" onClick={onRetry}>
            Check again
          </Button>
        }
      >
        <p>{engine.message}</p>
        <p>
          {engine.installed
            ? 'An engine is installed but does not answer: start it (for example with systemctl start docker), or point DOCKER_HOST at its socket.'
            : 'Install Docker or Podman on this host, then check again.'}
        </p>
      </Empty>
    </div>
  )
}

/** Layers of one or more pulls, keyed by layer id, as the kit's ProgressList shows them. */
export class PullLayers {
  readonly items: ProgressItem[] = []
  /** The last message without a layer ("Pulling from …", "Digest: …", "Status: …"). */
  status = ''

  add(m: PullMessage): void {
    if (!m.id || /^(Pulling from|Digest|Status)/.test(m.status)) {
      this.status = m.status
      return
    }
    let item = this.items.find((i) => i.id === m.id)
    if (!item) {
      item = { id: m.id, label: `Layer ${m.id}`, state: 'running' }
      this.items.push(item)
    }
    item.status = m.status
    if (/complete|Already exists/i.test(m.status)) {
      item.state = 'done'
      item.current = undefined
      item.total = undefined
    } else if (m.total) {
      item.current = m.current
      item.total = m.total
    }
  }

  fail(): void {
    for (const item of this.items) if (item.state === 'running') item.state = 'failed'
  }
}

/** A step of a long job (pull, create, start) with its state as an icon and words. */
export function Step({
  state,
  children,
}: {
  state: 'pending' | 'running' | 'done' | 'failed'
  children: ComponentChildren
}) {
  const icon =
    state === 'done' ? 'circle-check' : state === 'failed' ? 'circle-alert' : state === 'running' ? 'refresh' : 'clock'
  const word =
    state === 'done' ? 'done' : state === 'failed' ? 'failed' : state === 'running' ? 'in progress' : 'waiting'
  return (
    <li class={`ctr-step ctr-step-${state}`}>
      <Icon name={icon} size={16} class={state === 'running' ? 'ctr-spin' : undefined} />
      <span>{children}</span>
      <span class="sr-only">: {word}</span>
    </li>
  )
}

/** Seconds since `since`, ticking, for work whose progress the server does not report. */
export function Elapsed({ since }: { since: number }) {
  const [now, setNow] = useState(Date.now())
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000)
    return () => clearInterval(timer)
  }, [since])
  return <>{Math.max(0, Math.round((now - since) / 1000))} s</>
}

/** Reads a file as base64 (for the icon upload's JSON body). */
export function fileBase64(file: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader()
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ''))
    reader.onerror = () => reject(reader.error ?? new Error('The file could not be read'))
    reader.readAsDataURL(file)
  })
}

export type { PageContext }
