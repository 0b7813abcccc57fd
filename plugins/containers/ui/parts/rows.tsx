/**
 * Ports, volumes and environment as rows (add a row, remove a row), each row checked as it is typed, for the run
 * form and the edit dialog. Empty rows are ignored. The rows become RunSpec fields (object forms, so nothing is
 * parsed twice) and are read back from a container's inspect for editing.
 */
import { useState } from 'preact/hooks'
import { Button, IconButton } from '@hostd/ui'
import type { RunSpec } from '../../src/runspec.ts'
import type { Inspect } from './model.ts'

export interface PortRow {
  key: number
  host: string
  container: string
  proto: 'tcp' | 'udp'
}
export interface VolumeRow {
  key: number
  source: string
  target: string
  readOnly: boolean
}
export interface EnvRow {
  key: number
  name: string
  value: string
}
export interface Rows {
  ports: PortRow[]
  volumes: VolumeRow[]
  env: EnvRow[]
}

let nextKey = 1
const key = () => nextKey++
export const emptyPort = (): PortRow => ({ key: key(), host: '', container: '', proto: 'tcp' })
export const emptyVolume = (): VolumeRow => ({ key: key(), source: '', target: '', readOnly: false })
export const emptyEnv = (): EnvRow => ({ key: key(), name: '', value: '' })
export const emptyRows = (): Rows => ({ ports: [], volumes: [], env: [] })

const PORT = /^[0-9]{1,5}$/
const validPort = (s: string) => PORT.test(s) && Number(s) >= 1 && Number(s) <= 65535
/** `8080` or `127.0.0.1:8080` / `[::1]:8080`. */
const HOST = /^(?:(\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]):)?(\d{1,5})$/

export function portProblem(r: PortRow): string | null {
  if (!r.host.trim() && !r.container.trim()) return null
  if (!validPort(r.container.trim())) return 'The container port is a number from 1 to 65535'
  const host = r.host.trim()
  if (host) {
    const m = HOST.exec(host)
    if (!m || !validPort(m[2]!)) return 'The host port is a number from 1 to 65535 (optionally address:port)'
  }
  return null
}

export function volumeProblem(r: VolumeRow, admin: boolean): string | null {
  const source = r.source.trim()
  const target = r.target.trim()
  if (!source && !target) return null
  if (!target.startsWith('/')) return 'The path inside is an absolute path, starting with /'
  if (!source) return 'Give a volume name (or a host folder)'
  if (source.startsWith('/')) return admin ? null : 'A host folder needs an admin: use a volume name'
  if (!/^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/.test(source))
    return 'A volume name is letters, digits, _ . - (at least 2), or a host folder starting with /'
  return null
}

export function envProblem(r: EnvRow): string | null {
  if (!r.name.trim() && !r.value) return null
  if (!/^[^=\s]+$/.test(r.name.trim())) return 'A name has no spaces and no ='
  return null
}

/** The rows as RunSpec fields (only non-empty rows); throws the first problem, naming its row. */
export function rowsToSpec(rows: Rows, admin: boolean): Pick<RunSpec, 'ports' | 'volumes' | 'env'> {
  const problems: string[] = []
  rows.ports.forEach((r, i) => {
    const p = portProblem(r)
    if (p) problems.push(`Port ${i + 1}: ${p}`)
  })
  rows.volumes.forEach((r, i) => {
    const p = volumeProblem(r, admin)
    if (p) problems.push(`Volume ${i + 1}: ${p}`)
  })
  rows.env.forEach((r, i) => {
    const p = envProblem(r)
    if (p) problems.push(`Variable ${i + 1}: ${p}`)
  })
  if (problems.length) throw new Error(problems.join('. '))
  const ports = rows.ports
    .filter((r) => r.container.trim())
    .map((r) => {
      const m = HOST.exec(r.host.trim())
      return {
        hostAddress: (m?.[1] ?? '').replace(/^\[|\]$/g, ''),
        hostPort: m ? Number(m[2]) : 0,
        containerPort: Number(r.container.trim()),
        proto: r.proto,
      }
    })
  const volumes = rows.volumes
    .filter((r) => r.target.trim())
    .map((r) => ({ source: r.source.trim(), target: r.target.trim(), readOnly: r.readOnly }))
  const env = Object.fromEntries(rows.env.filter((r) => r.name.trim()).map((r) => [r.name.trim(), r.value]))
  return {
    ...(ports.length ? { ports } : {}),
    ...(volumes.length ? { volumes } : {}),
    ...(Object.keys(env).length ? { env } : {}),
  }
}

/** A container's ports, bind volumes and environment as rows (for editing). */
export function rowsFromInspect(info: Inspect): Rows {
  const ports: PortRow[] = []
  for (const [spec, bindings] of Object.entries(info.HostConfig.PortBindings ?? {})) {
    const [container = '', proto = 'tcp'] = spec.split('/')
    for (const b of bindings ?? []) {
      const address = b.HostIp && b.HostIp !== '0.0.0.0' ? (b.HostIp.includes(':') ? `[${b.HostIp}]` : b.HostIp) : ''
      const host = b.HostPort ? (address ? `${address}:${b.HostPort}` : b.HostPort) : ''
      ports.push({ key: key(), host, container, proto: proto === 'udp' ? 'udp' : 'tcp' })
    }
  }
  const volumes = (info.HostConfig.Binds ?? []).map((bind) => {
    const [source = '', target = '', options = ''] = bind.split(':')
    return { key: key(), source, target, readOnly: options.split(',').includes('ro') }
  })
  const env = (info.Config.Env ?? []).map((e) => {
    const eq = e.indexOf('=')
    return { key: key(), name: eq < 0 ? e : e.slice(0, eq), value: eq < 0 ? '' : e.slice(eq + 1) }
  })
  return { ports, volumes, env }
}

function RowError({ id, problem }: { id: string; problem: string | null }) {
  return problem ? (
    <p class="field-error ctr-row-error" id={id}>
      {problem}
    </p>
  ) : null
}

/** Unique ids for the rows' error messages. */
let idSeed = 0
function useIdBase(): string {
  const [id] = useState(() => `ctr-rows-${++idSeed}`)
  return id
}

export function PortRows({ rows, onChange }: { rows: PortRow[]; onChange: (rows: PortRow[]) => void }) {
  const base = useIdBase()
  const set = (i: number, change: Partial<PortRow>) => onChange(rows.map((r, j) => (j === i ? { ...r, ...change } : r)))
  return (
    <fieldset class="ctr-rows">
      <legend>Published ports</legend>
      {rows.length === 0 && <p class="muted">None: the container is reached only from its networks.</p>}
      {rows.map((r, i) => {
        const problem = portProblem(r)
        const err = `${base}-${r.key}`
        const invalid = problem ? true : undefined
        return (
          <div class="ctr-row" key={r.key}>
            <div class="ctr-row-fields ctr-row-ports">
              <input
                class="input"
                aria-label={`Host port ${i + 1}`}
                placeholder="Host port (empty: any free one)"
                inputMode="numeric"
                autoComplete="off"
                value={r.host}
                aria-invalid={invalid}
                aria-describedby={problem ? err : undefined}
                onInput={(e) => set(i, { host: e.currentTarget.value })}
              />
              <span aria-hidden="true">→</span>
              <input
                class="input"
                aria-label={`Container port ${i + 1}`}
                placeholder="Container port"
                inputMode="numeric"
                autoComplete="off"
                value={r.container}
                aria-invalid={invalid}
                aria-describedby={problem ? err : undefined}
                onInput={(e) => set(i, { container: e.currentTarget.value })}
              />
              <select
                class="input select"
                aria-label={`Protocol of port ${i + 1}`}
                value={r.proto}
                onChange={(e) => set(i, { proto: e.currentTarget.value === 'udp' ? 'udp' : 'tcp' })}
              >
                <option value="tcp">TCP</option>
                <option value="udp">UDP</option>
              </select>
              <IconButton
                icon="x"
                label={`Remove port ${i + 1}`}
                onClick={() => onChange(rows.filter((_, j) => j !== i))}
              />
            </div>
            <RowError id={err} problem={problem} />
          </div>
        )
      })}
      <div>
        <Button size="sm" icon="plus" onClick={() => onChange([...rows, emptyPort()])}>
          Add port
        </Button>
      </div>
    </fieldset>
  )
}

export function VolumeRows({
  rows,
  onChange,
  admin,
}: {
  rows: VolumeRow[]
  onChange: (rows: VolumeRow[]) => void
  admin: boolean
}) {
  const base = useIdBase()
  const set = (i: number, change: Partial<VolumeRow>) =>
    onChange(rows.map((r, j) => (j === i ? { ...r, ...change } : r)))
  return (
    <fieldset class="ctr-rows">
      <legend>Volumes</legend>
      {rows.length === 0 && <p class="muted">None: what the container writes goes with it when it is removed.</p>}
      {rows.map((r, i) => {
        const problem = volumeProblem(r, admin)
        const err = `${base}-${r.key}`
        const invalid = problem ? true : undefined
        return (
          <div class="ctr-row" key={r.key}>
            <div class="ctr-row-fields ctr-row-volumes">
              <input
                class="input"
                aria-label={`Volume ${i + 1}: volume name${admin ? ' or host folder' : ''}`}
                placeholder={admin ? 'Volume name or /host/folder' : 'Volume name'}
                autoComplete="off"
                spellcheck={false}
                value={r.source}
                aria-invalid={invalid}
                aria-describedby={problem ? err : undefined}
                onInput={(e) => set(i, { source: e.currentTarget.value })}
              />
              <span aria-hidden="true">→</span>
              <input
                class="input"
                aria-label={`Volume ${i + 1}: path inside`}
                placeholder="Path inside the container"
                autoComplete="off"
                spellcheck={false}
                value={r.target}
                aria-invalid={invalid}
                aria-describedby={problem ? err : undefined}
                onInput={(e) => set(i, { target: e.currentTarget.value })}
              />
              <label class="ctr-check">
                <input
                  type="checkbox"
                  class="checkbox"
                  checked={r.readOnly}
                  onChange={(e) => set(i, { readOnly: e.currentTarget.checked })}
                />
                <span>
                  Read-only<span class="sr-only"> (volume {i + 1})</span>
                </span>
              </label>
              <IconButton
                icon="x"
                label={`Remove volume ${i + 1}`}
                onClick={() => onChange(rows.filter((_, j) => j !== i))}
              />
            </div>
            <RowError id={err} problem={problem} />
          </div>
        )
      })}
      <div>
        <Button size="sm" icon="plus" onClick={() => onChange([...rows, emptyVolume()])}>
          Add volume
        </Button>
      </div>
    </fieldset>
  )
}

export function EnvRows({ rows, onChange }: { rows: EnvRow[]; onChange: (rows: EnvRow[]) => void }) {
  const base = useIdBase()
  const set = (i: number, change: Partial<EnvRow>) => onChange(rows.map((r, j) => (j === i ? { ...r, ...change } : r)))
  return (
    <fieldset class="ctr-rows">
      <legend>Environment</legend>
      {rows.length === 0 && <p class="muted">None besides the image's own.</p>}
      {rows.map((r, i) => {
        const problem = envProblem(r)
        const err = `${base}-${r.key}`
        return (
          <div class="ctr-row" key={r.key}>
            <div class="ctr-row-fields ctr-row-env">
              <input
                class="input mono"
                aria-label={`Variable ${i + 1}: name`}
                placeholder="Name"
                autoComplete="off"
                spellcheck={false}
                value={r.name}
                aria-invalid={problem ? true : undefined}
                aria-describedby={problem ? err : undefined}
                onInput={(e) => set(i, { name: e.currentTarget.value })}
              />
              <span aria-hidden="true">=</span>
              <input
                class="input mono"
                aria-label={`Variable ${i + 1}: value`}
                placeholder="Value"
                autoComplete="off"
                spellcheck={false}
                value={r.value}
                onInput={(e) => set(i, { value: e.currentTarget.value })}
              />
              <IconButton
                icon="x"
                label={`Remove variable ${i + 1}`}
                onClick={() => onChange(rows.filter((_, j) => j !== i))}
              />
            </div>
            <RowError id={err} problem={problem} />
          </div>
        )
      })}
      <div>
        <Button size="sm" icon="plus" onClick={() => onChange([...rows, emptyEnv()])}>
          Add variable
        </Button>
      </div>
    </fieldset>
  )
}
