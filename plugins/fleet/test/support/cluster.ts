/**
 * A real nats-server cluster on loopback for the fleet's tests and bench: N nodes with JetStream, each with its own
 * client and cluster port, one temporary folder, the users the fleet plugin's own `renderServerConfig` writes (so the
 * permissions tested are the ones it documents). Nodes are stopped by PID.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { connect as tcpConnect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventually, freePort } from '@hostd/sdk/testing'
import { renderServerConfig, type ServerUser } from '../../src/subjects.ts'

export interface NatsNode {
  name: string
  port: number
  url: string
  process: ChildProcess
  kill(): Promise<void>
}

export interface NatsCluster {
  nodes: NatsNode[]
  /** Every node's client URL, comma-separated (HOSTD_FLEET_NATS_URL). */
  urls: string
  stop(): Promise<void>
}

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = tcpConnect(port, '127.0.0.1')
    s.once('connect', () => {
      s.destroy()
      resolve(true)
    })
    s.once('error', () => resolve(false))
  })

export async function startCluster(size: number, users: ServerUser[]): Promise<NatsCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'hostd-nats-'))
  const ports = await Promise.all(Array.from({ length: size }, () => freePort()))
  const clusterPorts = await Promise.all(Array.from({ length: size }, () => freePort()))
  const nodes: NatsNode[] = []
  for (let i = 0; i < size; i++) {
    const name = `n${i + 1}`
    const store = join(dir, name)
    await mkdir(store)
    const conf = join(dir, `${name}.conf`)
    await writeFile(
      conf,
      renderServerConfig({
        name,
        port: ports[i]!,
        storeDir: store,
        users,
        ...(size > 1
          ? {
              cluster: {
                name: 'hostd-test',
                port: clusterPorts[i]!,
                routes: clusterPorts.filter((_, j) => j !== i).map((p) => `nats-route://127.0.0.1:${p}`),
              },
            }
          : {}),
      }),
    )
    const child = spawn('nats-server', ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] })
    let err = ''
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err = (err + d).slice(-4000)))
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    nodes.push({
      name,
      port: ports[i]!,
      url: `nats://127.0.0.1:${ports[i]}`,
      process: child,
      async kill() {
        if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, 'SIGKILL')
        await exited
      },
    })
    child.once('exit', (code) => {
      if (code !== null && code !== 0) console.error(`nats-server ${name} exited ${code}: ${err}`)
    })
  }
  await Promise.all(nodes.map((n) => eventually(() => portOpen(n.port), 50)))
  return {
    nodes,
    urls: nodes.map((n) => n.url).join(','),
    async stop() {
      await Promise.all(nodes.map((n) => n.kill()))
      await rm(dir, { recursive: true, force: true })
    },
  }
}
