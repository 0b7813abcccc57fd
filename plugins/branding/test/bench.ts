/**
 * Branding benchmark (`npm run bench`, or BENCH_ONLY=branding): the public routes the sign-in page loads, in-process,
 * against GET /health (the kernel's cheapest public route) in the same kernel. Ratios, not times.
 */
import { startTestKernel } from '@hostd/sdk/testing'
import branding from '../src/index.ts'
import { png } from './images.ts'

async function rate(label: string, n: number, once: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(200, n); i++) await once()
  const start = process.hrtime.bigint()
  for (let i = 0; i < n; i++) await once()
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  console.log(`${label.padEnd(44)} ${(n / seconds).toFixed(0).padStart(8)} /s`)
  return n / seconds
}

const t = await startTestKernel({ plugins: [branding] })
try {
  await t.inject({
    method: 'PUT',
    url: '/api/branding',
    as: 'admin',
    payload: { headline: 'Bench', description: 'x'.repeat(1000) },
  })
  const image = Buffer.concat([png(), Buffer.alloc(512 * 1024)])
  const url = (
    await t.inject({
      method: 'PUT',
      url: '/api/branding/background',
      as: 'admin',
      headers: { 'content-type': 'image/png' },
      payload: image,
    })
  ).json().background
  const get = (path: string) => async () => {
    const res = await t.inject({ url: path })
    if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode}`)
  }
  const health = await rate('reference: GET /health', 3000, get('/health'))
  const text = await rate('GET /api/branding', 3000, get('/api/branding'))
  const background = await rate('GET background (512 KiB, from memory)', 1000, get(url))
  const result = {
    healthPerSecond: Math.round(health),
    brandingPerSecond: Math.round(text),
    backgroundPerSecond: Math.round(background),
    brandingRatio: +(text / health).toFixed(3),
    backgroundRatio: +(background / health).toFixed(3),
  }
  console.log(`\nbranding/health ${result.brandingRatio}, background/health ${result.backgroundRatio}`)
  console.log(`BENCH_JSON ${JSON.stringify(result)}`)
} finally {
  await t.close()
}
