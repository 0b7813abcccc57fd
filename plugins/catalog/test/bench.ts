/**
 * Catalog benchmark (`npm run bench`, or BENCH_ONLY=catalog): GET /api/catalog (the built-in catalog plus a
 * 200-app folder source; the containers plugin without an engine, so this measures the catalog's own work)
 * against GET /api/version in the same kernel. Ratios, not times.
 */
import { rm } from 'node:fs/promises'
import { startTestKernel } from '@hostd/sdk/testing'
import containers from '../../containers/src/index.ts'
import { createCatalogPlugin } from '../src/index.ts'
import { app, catalogFile, sourceDir } from './support.ts'

async function rate(label: string, n: number, once: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(100, n); i++) await once()
  const start = process.hrtime.bigint()
  for (let i = 0; i < n; i++) await once()
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  console.log(`${label.padEnd(44)} ${(n / seconds).toFixed(0).padStart(8)} /s`)
  return n / seconds
}

const apps = Array.from({ length: 200 }, (_, i) =>
  app(`app-${i}`, {
    description: 'd'.repeat(500),
    fields: [{ key: 'port', label: 'Port', type: 'port', default: 8000 + i }],
    runSpec: { image: 'example/app:1.0', ports: ['{{fields.port}}:80'] },
  }),
)
const dir = await sourceDir({ 'apps.json': catalogFile(apps) })
const t = await startTestKernel({
  plugins: [containers, createCatalogPlugin()],
  env: { DOCKER_HOST: 'unix:///nonexistent/hostd-bench.sock' },
})
try {
  await t.inject({
    method: 'POST',
    url: '/api/catalog/sources',
    as: 'admin',
    payload: { kind: 'directory', location: dir },
  })
  const get = (path: string) => async () => {
    const res = await t.inject({ url: path, as: 'viewer' })
    if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode}`)
  }
  const version = await rate('reference: GET /api/version', 2000, get('/api/version'))
  const catalog = await rate('GET /api/catalog (209 apps)', 300, get('/api/catalog'))
  const result = {
    versionPerSecond: Math.round(version),
    catalogPerSecond: Math.round(catalog),
    catalogRatio: +(catalog / version).toFixed(3),
  }
  console.log(`\ncatalog/version ${result.catalogRatio}`)
  console.log(`BENCH_JSON ${JSON.stringify(result)}`)
} finally {
  await t.close()
  await rm(dir, { recursive: true, force: true })
}
