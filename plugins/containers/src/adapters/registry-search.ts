/**
 * GET /api/registry/search: Docker Hub's search API (`GET <index>/v1/search?q=&n=`), answering
 * `{ num_results, query, results: [{ name, description, star_count, is_official, is_automated }] }`.
 * The index is HOSTD_REGISTRY_INDEX_URL (default https://index.docker.io), the timeout
 * HOSTD_REGISTRY_SEARCH_TIMEOUT_MS (default 5000). The engine's own /images/search is not used: it cannot
 * reach a v2-only registry and would tie search to the engine being up.
 */
import { ContainerErrors } from '../errors.ts'

export const DEFAULT_INDEX = 'https://index.docker.io'
const MAX_ANSWER_BYTES = 2 * 1024 * 1024

export function indexUrl(): string {
  return (process.env.HOSTD_REGISTRY_INDEX_URL || DEFAULT_INDEX).replace(/\/+$/, '')
}

/** One result of an index's /v1/search, as Docker Hub or an older registry (repo_name...) names its fields. */
interface IndexResult {
  name?: string
  repo_name?: string
  description?: string
  short_description?: string
  star_count?: number
  is_official?: boolean
  is_automated?: boolean
}

export async function searchRegistry(q: string, limit: number) {
  const base = indexUrl()
  const timeout = Number(process.env.HOSTD_REGISTRY_SEARCH_TIMEOUT_MS) || 5000
  const url = `${base}/v1/search?${new URLSearchParams({ q, n: String(limit) })}`
  let body: { results?: unknown } | null
  try {
    const res = await fetch(url, {
      signal: AbortSignal.timeout(timeout),
      headers: { accept: 'application/json' },
      redirect: 'follow',
    })
    if (!res.ok) throw new Error(`it answered HTTP ${res.status}`)
    const text = await res.text()
    if (text.length > MAX_ANSWER_BYTES) throw new Error('its answer is too large')
    body = JSON.parse(text)
  } catch (err) {
    const why =
      (err as Error).name === 'TimeoutError'
        ? `no answer within ${timeout} ms`
        : ((err as { cause?: Error }).cause?.message ?? (err as Error).message)
    throw ContainerErrors.searchUnavailable(`The registry search index ${base} cannot be reached: ${why}`)
  }
  const results: IndexResult[] = Array.isArray(body?.results) ? body.results : []
  return {
    query: q,
    results: results.slice(0, limit).map((r) => ({
      name: String(r.name ?? r.repo_name ?? ''),
      description: String(r.description ?? r.short_description ?? ''),
      stars: Number.isInteger(r.star_count) ? r.star_count : 0,
      official: Boolean(r.is_official),
      automated: Boolean(r.is_automated),
    })),
  }
}
