// biome-ignore-all lint/suspicious/noTemplateCurlyInString: compose files write ${VAR} in plain strings
/**
 * A catalog entry that is a stack (an app with a database): the catalog plugin installs it through the stacks
 * plugin as one stack (its fields in the stack's .env), lists it as one install, and uninstalls it as one. A private
 * dockerd and a local registry; a catalog source folder with the app.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventually, freePort, startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createCatalogPlugin } from '../../catalog/src/index.ts'
import containers from '../../containers/src/index.ts'
import {
  importTestImage,
  pushToRegistry,
  startEngine,
  startRegistry,
  type TestEngine,
  type TestRegistry,
} from '../../containers/test/support/engine.ts'
import { createStacksPlugin } from '../src/index.ts'

describe('a catalog app that is a stack', () => {
  let engine: TestEngine
  let registry: TestRegistry
  let t: TestKernel
  let stacksDir: string
  let sourceDir: string

  beforeAll(async () => {
    engine = await startEngine()
    registry = await startRegistry(engine.dir)
    await importTestImage(engine, 'hostd-test/notes:1', 'notes app')
    const image = `${registry.address}/hostd-test/notes:1`
    await pushToRegistry(engine, 'hostd-test/notes:1', image)
    stacksDir = await mkdtemp(join(tmpdir(), 'hostd-stacks-catalog-'))
    sourceDir = await mkdtemp(join(tmpdir(), 'hostd-catalog-stack-source-'))
    const compose = [
      'services:',
      '  web:',
      `    image: ${image}`,
      '    command: httpd -f -p 8080 -h /www',
      '    ports: ["127.0.0.1:${WEB_PORT}:8080"]',
      '    environment: { DB_PASSWORD: "${DB_PASSWORD:?}" }',
      '    depends_on: { db: { condition: service_healthy } }',
      '    stop_grace_period: 1s',
      '  db:',
      `    image: ${image}`,
      '    command: ["sh", "-c", "echo ready > /data/ready; exec sleep 3600"]',
      '    volumes: ["data:/data"]',
      '    healthcheck: { test: ["CMD", "cat", "/data/ready"], interval: 300ms, retries: 100 }',
      '    stop_grace_period: 1s',
      'volumes: { data: {} }',
    ].join('\n')
    await writeFile(
      join(sourceDir, 'apps.json'),
      JSON.stringify({
        format: 'hostd-catalog/1',
        name: 'Stack apps',
        apps: [
          {
            id: 'notes',
            version: '1.0.0',
            title: 'Notes with a database',
            categories: ['Testing'],
            fields: [
              { key: 'WEB_PORT', label: 'Web port', type: 'port', required: true },
              { key: 'DB_PASSWORD', label: 'Database password', type: 'password', required: true },
            ],
            compose,
          },
        ],
      }),
    )
    t = await startTestKernel({
      plugins: [containers, createStacksPlugin({ dir: stacksDir }), createCatalogPlugin()],
      listen: true,
      env: { DOCKER_HOST: engine.host },
    })
    const added = await t.inject({
      method: 'POST',
      url: '/api/catalog/sources',
      as: 'admin',
      payload: { kind: 'directory', location: sourceDir, id: 'stacks' },
    })
    expect(added.json()).toMatchObject({ ok: true, apps: 1, skipped: [] })
  }, 120_000)

  afterAll(async () => {
    await t?.close()
    await registry?.stop()
    await engine?.stop()
    for (const d of [stacksDir, sourceDir]) if (d) await rm(d, { recursive: true, force: true })
  })

  it('installs both containers as one stack, lists it as one install, and uninstalls it as one', async () => {
    const port = await freePort()
    const installed = await t.inject({
      method: 'POST',
      url: '/api/catalog/install',
      as: 'operator',
      payload: { appId: 'notes', source: 'stacks', values: { WEB_PORT: port, DB_PASSWORD: "it's $ecret" } },
    })
    expect(installed.statusCode, installed.body).toBe(201)
    expect(installed.json()).toMatchObject({ stack: 'notes', appId: 'notes', version: '1.0.0' })
    await eventually(async () => (await fetch(`http://127.0.0.1:${port}/`).then((r) => r.text())).includes('notes app'))
    // The value reached the container as it was typed ($ and quote included).
    const web = (await engine.api('GET', '/containers/notes-web-1/json')).json()
    expect(web.Config.Env).toContain("DB_PASSWORD=it's $ecret")
    expect(web.Config.Labels).toMatchObject({
      'dev.hostd.catalog.app': 'notes',
      'dev.hostd.catalog.stack': 'notes',
      'com.docker.compose.project': 'notes',
    })
    expect(await readFile(join(stacksDir, 'notes', 'compose.yaml'), 'utf8')).toContain('${DB_PASSWORD:?}')

    const app = (await t.inject({ url: '/api/catalog', as: 'viewer' }))
      .json()
      .apps.find((a: { id: string }) => a.id === 'notes')
    expect(app).toMatchObject({ kind: 'stack', installed: true })
    expect(app.installs).toEqual([expect.objectContaining({ name: 'notes', stack: 'notes', state: 'running' })])
    const stacks = (await t.inject({ url: '/api/stacks', as: 'viewer' })).json().stacks
    expect(stacks.map((s: { name: string; state: string }) => [s.name, s.state])).toEqual([['notes', 'running']])

    // A redeploy from the stacks page keeps the catalog's marks.
    expect(
      (await t.inject({ method: 'POST', url: '/api/stacks/notes/deploy', as: 'operator', payload: {} })).statusCode,
    ).toBe(200)
    const again = (await t.inject({ url: '/api/catalog', as: 'viewer' }))
      .json()
      .apps.find((a: { id: string }) => a.id === 'notes')
    expect(again.installs).toHaveLength(1)

    const removed = await t.inject({
      method: 'POST',
      url: '/api/catalog/uninstall',
      as: 'operator',
      payload: { container: 'notes-db-1', removeVolumes: true },
    })
    expect(removed.statusCode, removed.body).toBe(200)
    expect(removed.json()).toMatchObject({ name: 'notes', removedVolumes: ['notes_data'] })
    expect((await t.inject({ url: '/api/stacks', as: 'viewer' })).json().stacks).toEqual([])
    expect((await engine.api('GET', '/volumes/notes_data')).status).toBe(404)
  }, 90_000)
})
