/**
 * No input yields a 5xx (issue 12, item 4). Every operation in the OpenAPI document (the kernel and every built-in
 * plugin, loaded as the route-table test loads them) gets malformed values over a real HTTP connection: in each path
 * parameter, each query parameter, the whole body and each top-level body field. Values: NUL, lone surrogates,
 * invalid UTF-8 (percent-encoded and as raw bytes), 1 MB strings, wrong JSON types, arrays for objects, huge and
 * non-integer numbers, deep nesting, prototype keys. Each request starts from the route's own sample (so the other
 * fields are valid and the handler is reached) and uses a fresh admin session (admin passes every role check).
 *
 * The components are the real ones wherever the suite runs them: a private dockerd with a local registry (containers),
 * the root helper in dry-run mode (power, storage, network and privileged actions answer their argument vector
 * instead of changing this machine), talking to a real NetworkManager in its own network namespace; widget scripts
 * run as the unprivileged test account; catalog installs pull from the local registry. Tailscale cannot run here:
 * the VPN routes talk to the VPN tests' STAND-IN of tailscaled's LocalAPI. What is absent here and why is listed in
 * ABSENT below.
 *
 * It also checks that no value reaches the SQL text: every statement SQLite prepares during the run is recorded, and
 * none may contain the marker the malformed values carry (values are bound as parameters, see db/bound-driver.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { request } from 'node:http'
import { connect } from 'node:net'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestKernel, type TestKernel } from '@hostd/kernel/testing'
import hello from '../examples/hello-plugin/src/index.ts'
import { builtins, SAMPLES, type Ctx } from './support/route-samples.ts'
import {
  importTestImage,
  pushToRegistry,
  startEngine,
  startRegistry,
  type TestEngine,
  type TestRegistry,
} from '../plugins/containers/test/support/engine.ts'
import { startHelper, type RunningHelper } from '../helper/test/start-helper.ts'
import { startNetworkManager, type NetworkManagerUnderTest } from '../plugins/network/test/nm-namespace.ts'
import { startStandInLocalApi, type StandInLocalApi } from '../plugins/vpn/test/support/localapi-standin.ts'
import { ensureTestAccount } from './support/unix-user.ts'

/** Carried by the malformed strings: it must never show up in a prepared SQL text. */
const MARK = 'hostdfuzzmark'
const MB = 1_000_000
/** A request with no answer at all is a failure too; this only bounds the wait for one. */
const REQUEST_TIMEOUT_MS = 30_000

/**
 * Answers that are not crashes: a component that cannot exist on this machine. Key: '<METHOD> <path>', value: the
 * status allowed and why.
 */
const ABSENT: Record<string, { status: number; why: string }> = {
  'GET /api/registry/search': {
    status: 503,
    why: 'the public registry index is unreachable without network (the containers tests use a stand-in)',
  },
}

/** Path segments and query values, percent-encoded as they go on the wire (raw: sent as these bytes). */
const URL_VALUES: { name: string; text: string; raw?: boolean }[] = [
  { name: 'NUL', text: '%00' },
  { name: 'NUL inside', text: `${MARK}%00x` },
  { name: 'lone high surrogate (UTF-8 of U+D800)', text: `${MARK}%ED%A0%80` },
  { name: 'lone low surrogate', text: '%ED%B0%80' },
  { name: 'invalid UTF-8 byte', text: `${MARK}%FF%FE` },
  { name: 'overlong slash', text: '%C0%AF' },
  { name: 'truncated sequence', text: '%F0%28%8C' },
  { name: 'raw invalid UTF-8 bytes', text: `${MARK}\xff\xfe`, raw: true },
  { name: 'raw UTF-8 of a surrogate', text: '\xed\xa0\x80', raw: true },
  { name: 'long', text: MARK + 'x'.repeat(5000) },
  { name: '1 MB', text: 'x'.repeat(MB) },
  { name: 'negative', text: '-1' },
  { name: 'huge number', text: '99999999999999999999999999' },
  { name: 'overflowing float', text: '1e309' },
  { name: 'fraction', text: '1.5' },
  { name: 'empty', text: '' },
  { name: 'JSON array', text: '%5B%5D' },
  { name: 'JSON object', text: '%7B%7D' },
  { name: 'quotes', text: `${MARK}%22%27%3B--` },
  { name: 'dot-dot', text: '..' },
  { name: 'encoded traversal', text: '%2E%2E%2F%2E%2E%2Fetc' },
  { name: 'bidi override', text: `${MARK}%E2%80%AE` },
]

/** A body field's replacement, as JSON text (so non-JSON-safe numbers go out as written). */
const FIELD_VALUES: { name: string; json: string }[] = [
  { name: 'null', json: 'null' },
  { name: 'true', json: 'true' },
  { name: 'zero', json: '0' },
  { name: 'negative', json: '-1' },
  { name: 'fraction', json: '1.5' },
  { name: 'huge', json: '1e308' },
  { name: 'overflowing', json: '1e309' },
  { name: 'beyond safe integers', json: '9007199254740993' },
  { name: 'empty string', json: '""' },
  { name: 'NUL', json: JSON.stringify(`${MARK}\u0000x`) },
  { name: 'lone surrogate', json: JSON.stringify(`${MARK}\ud800`) },
  { name: 'lone low surrogate', json: JSON.stringify('\udfff') },
  { name: '1 MB string', json: JSON.stringify(MARK + 'x'.repeat(MB)) },
  { name: 'empty array', json: '[]' },
  { name: 'array of null', json: '[null]' },
  { name: 'array of strings', json: JSON.stringify([`${MARK}\u0000`, '\ud800']) },
  { name: 'object', json: '{}' },
  { name: 'object with a field', json: '{"a":1}' },
  { name: 'nested arrays', json: '[[[[]]]]' },
]

/** Whole bodies in place of the route's JSON object. */
const BODIES: { name: string; bytes: Buffer }[] = [
  { name: 'array', bytes: Buffer.from('[]') },
  { name: 'array of objects', bytes: Buffer.from('[{}]') },
  { name: 'null', bytes: Buffer.from('null') },
  { name: 'string', bytes: Buffer.from(JSON.stringify(`${MARK}\u0000`)) },
  { name: 'number', bytes: Buffer.from('1e309') },
  { name: 'truncated', bytes: Buffer.from('{"a":') },
  {
    name: 'invalid UTF-8',
    bytes: Buffer.concat([Buffer.from(`{"${MARK}":"`), Buffer.from([0xff, 0xfe, 0xc0, 0xaf]), Buffer.from('"}')]),
  },
  { name: 'deep nesting', bytes: Buffer.from('['.repeat(100_000) + ']'.repeat(100_000)) },
  { name: 'deep objects', bytes: Buffer.from('{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000)) },
  {
    name: 'prototype keys',
    bytes: Buffer.from('{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}}}'),
  },
  { name: 'NUL bytes', bytes: Buffer.from([0x7b, 0x00, 0x7d]) },
]

interface Answer {
  status: number
  body: string
}

interface Operation {
  method: string
  path: string
  pathParams: string[]
  queryParams: string[]
  bodyFields: string[] | null
}

describe('malformed input gets no 5xx on any route', () => {
  let t: TestKernel
  let engine: TestEngine
  let registry: TestRegistry
  let helper: RunningHelper
  let nm: NetworkManagerUnderTest
  let tailscale: StandInLocalApi
  let work: string
  let adminId: string
  const prepared: string[] = []

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'hostd-fuzz-'))
    engine = await startEngine()
    registry = await startRegistry(engine.dir)
    await importTestImage(engine, 'hostd-test/busybox:1')
    await pushToRegistry(engine, 'hostd-test/busybox:1', `${registry.address}/hostd-test/busybox:1`)
    nm = await startNetworkManager()
    helper = await startHelper({ dryRun: true, dbusSystemBus: nm.busAddress })
    tailscale = await startStandInLocalApi({ state: 'Running' })
    // These plugins read their settings from the daemon's environment when they start.
    process.env.HOSTD_TAILSCALE_SOCKET = tailscale.socketPath
    process.env.HOSTD_WIDGETS_USER = (await ensureTestAccount()).name
    process.env.HOSTD_WIDGETS_WORK_DIR = join(work, 'widgets')
    // The stacks samples deploy and update a stack of this image, pulled from the local registry.
    process.env.HOSTD_TEST_STACK_IMAGE = `${registry.address}/hostd-test/busybox:1`
    await mkdir(join(work, 'catalog'))
    await writeFile(
      join(work, 'catalog', 'apps.json'),
      JSON.stringify({
        format: 'hostd-catalog/1',
        name: 'fuzz',
        apps: [
          {
            id: 'fuzz',
            version: '1.0.0',
            title: 'Fuzz',
            categories: ['Testing'],
            runSpec: { image: `${registry.address}/hostd-test/busybox:1`, command: ['true'] },
          },
        ],
      }),
    )
    t = await startTestKernel({
      plugins: [hello, ...builtins.map((b) => b.plugin)],
      overNetwork: true,
      env: {
        DOCKER_HOST: engine.host,
        HOSTD_HELPER_SOCKET: helper.socket,
        HOSTD_PLUGINS_DIR: join(work, 'plugins'),
        HOSTD_LOGIN_MAX_FAILURES_PER_ADDRESS: '10000',
      },
    })
    adminId = (await t.login('admin')).userId
    const source = await t.inject({
      method: 'POST',
      url: '/api/catalog/sources',
      as: 'admin',
      payload: { kind: 'directory', location: join(work, 'catalog'), id: 'fuzz' },
    })
    expect(source.statusCode, source.body).toBe(201)
    // Every statement SQLite compiles from now on, whoever prepares it (the ORM through Kysely, the session store).
    const native = t.kernel.db.native
    const prepare = native.prepare.bind(native)
    native.prepare = ((sql: string) => {
      prepared.push(sql)
      return prepare(sql)
    }) as typeof native.prepare
  }, 180_000)

  afterAll(async () => {
    await t?.close()
    await helper?.stop()
    await nm?.stop()
    await tailscale?.stop()
    await tailscale?.remove()
    for (const name of ['HOSTD_TAILSCALE_SOCKET', 'HOSTD_WIDGETS_USER', 'HOSTD_WIDGETS_WORK_DIR'])
      delete process.env[name]
    await registry?.stop()
    await engine?.stop()
    await rm(work, { recursive: true, force: true })
  })

  /** One request over a fresh connection; raw paths go out byte for byte. */
  function send(method: string, path: string, body?: Buffer, contentType = 'application/json'): Promise<Answer> {
    const token = t.kernel.services.sessions.create(adminId, '127.0.0.1')
    const url = new URL(t.url!)
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { authorization: `Bearer ${token}`, connection: 'close' }
      if (body) Object.assign(headers, { 'content-type': contentType, 'content-length': String(body.length) })
      const req = request(
        { host: url.hostname, port: url.port, method, path, headers, agent: false, timeout: REQUEST_TIMEOUT_MS },
        (res) => {
          const status = res.statusCode ?? 0
          // Only an error's body is of interest; a success may be a stream that never ends (server-sent events).
          if (status < 500) {
            res.destroy()
            return resolve({ status, body: '' })
          }
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () => resolve({ status, body: Buffer.concat(chunks).toString('utf8').slice(0, 300) }))
          res.on('error', reject)
        },
      )
      req.on('timeout', () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)))
      req.on('error', reject)
      req.end(body)
    })
  }

  /** A request line with bytes the HTTP client would not send as they are. */
  function sendRaw(method: string, path: string): Promise<Answer> {
    const token = t.kernel.services.sessions.create(adminId, '127.0.0.1')
    const url = new URL(t.url!)
    return new Promise((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname)
      socket.setTimeout(REQUEST_TIMEOUT_MS, () =>
        socket.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)),
      )
      const chunks: Buffer[] = []
      socket.on('data', (c: Buffer) => {
        chunks.push(c)
        // The status line is enough unless it is an error (a stream would never close).
        const text = Buffer.concat(chunks).toString('latin1')
        if (/^HTTP\/1\.1 [1-4]\d\d /.test(text)) socket.destroy()
      })
      socket.on('error', reject)
      socket.on('close', () => {
        const text = Buffer.concat(chunks).toString('latin1')
        resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), body: text.slice(0, 300) })
      })
      const length = method === 'GET' ? '' : 'content-length: 0\r\n'
      socket.end(
        Buffer.from(
          `${method} ${path} HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${token}\r\n${length}connection: close\r\n\r\n`,
          'latin1',
        ),
      )
    })
  }

  /** Every operation of the OpenAPI document the daemon serves. */
  async function operations(): Promise<Operation[]> {
    const res = await t.inject({
      url: '/api/openapi.json',
      as: { token: t.kernel.services.sessions.create(adminId, '127.0.0.1') },
    })
    const doc = res.json()
    const ops: Operation[] = []
    for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(methods)) {
        const schema = op.requestBody?.content?.['application/json']?.schema
        ops.push({
          method: method.toUpperCase(),
          path,
          pathParams: [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!),
          queryParams: (op.parameters ?? []).filter((p: any) => p.in === 'query').map((p: any) => p.name),
          bodyFields: schema ? Object.keys(schema.properties ?? {}) : null,
        })
      }
    }
    return ops
  }

  it('covers every operation of the OpenAPI document and finds no 5xx', async () => {
    const ops = await operations()
    expect(ops.length).toBeGreaterThan(90)
    const ctx: Ctx = {
      t,
      userId: adminId,
      pluginArchive: Buffer.alloc(0),
      freshUser: async () =>
        (
          await t.kernel.services.users.create(
            `fuzz${Math.random().toString(36).slice(2, 10)}`,
            'fuzz user password',
            'viewer',
          )
        ).id,
    }
    const failures: string[] = []
    const statuses = new Map<number, number>()
    let sent = 0
    for (const op of ops) {
      const key = `${op.method} ${op.path.replace(/\{([^}]+)\}/g, ':$1')}`
      const sample = SAMPLES[key] ?? builtins.find((b) => b.samples[key])?.samples[key]
      expect(sample, `no sample for ${key}`).toBeDefined()
      const base = await baseRequest(key, await sample!(ctx))
      const check = (what: string, answer: Answer) => {
        sent++
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
        const allowed = ABSENT[key]
        if (answer.status >= 500 && !(allowed && answer.status === allowed.status))
          failures.push(`${key} ${what}: ${answer.status} ${answer.body}`)
        if (answer.status === 0) failures.push(`${key} ${what}: no HTTP answer ${answer.body}`)
      }
      const target = new URL(base.url, 'http://x')
      const segments = target.pathname.split('/')
      const templateSegments = op.path.split('/')
      // Path parameters.
      for (const param of op.pathParams) {
        const at = templateSegments.indexOf(`{${param}}`)
        for (const value of URL_VALUES) {
          const path = [...segments.slice(0, at), value.text, ...segments.slice(at + 1)].join('/') + target.search
          const body = op.method === 'GET' || op.method === 'DELETE' ? undefined : base.body
          check(
            `path ${param}=${value.name}`,
            await (value.raw ? sendRaw(op.method, path) : send(op.method, path, body, base.contentType)).catch(
              errorAnswer,
            ),
          )
        }
      }
      // Query parameters, declared ones and one nobody declared, each once and repeated.
      for (const param of [...op.queryParams, `${MARK}`]) {
        for (const value of URL_VALUES) {
          const search = new URLSearchParams(target.search)
          search.delete(param)
          const query = [search.toString(), `${param}=${value.text}`].filter(Boolean).join('&')
          const path = `${target.pathname}?${query}`
          const body = op.method === 'GET' || op.method === 'DELETE' ? undefined : base.body
          check(
            `query ${param}=${value.name}`,
            await (value.raw ? sendRaw(op.method, path) : send(op.method, path, body, base.contentType)).catch(
              errorAnswer,
            ),
          )
        }
        check(
          `query ${param} repeated`,
          await send(op.method, `${target.pathname}?${param}=a&${param}=%00&${param}=%FF`, undefined).catch(
            errorAnswer,
          ),
        )
      }
      if (op.method === 'GET') continue
      // The whole body, then each top-level field of the sample's body.
      for (const body of BODIES)
        check(`body ${body.name}`, await send(op.method, base.url, body.bytes).catch(errorAnswer))
      const object =
        base.json && typeof base.json === 'object' && !Array.isArray(base.json)
          ? (base.json as Record<string, unknown>)
          : {}
      for (const field of new Set([...(op.bodyFields ?? []), ...Object.keys(object)])) {
        for (const value of FIELD_VALUES) {
          const text = JSON.stringify({ ...object, [field]: '\u0001REPLACE\u0001' }).replace(
            '"\\u0001REPLACE\\u0001"',
            value.json,
          )
          check(`body ${field}=${value.name}`, await send(op.method, base.url, Buffer.from(text)).catch(errorAnswer))
        }
      }
    }
    console.log(
      `${sent} malformed requests to ${ops.length} operations; answers by status:`,
      Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])),
    )
    // No 5xx, and no malformed value was ever part of a statement's text.
    const sqlWithValues = prepared.filter((sql) => sql.includes(MARK)).map((sql) => sql.slice(0, 200))
    expect({ failures, sqlWithValues }).toEqual({ failures: [], sqlWithValues: [] })
    expect(sent).toBeGreaterThan(5000)
  }, 1_800_000)

  /** The route's sample, with real components where the sample assumes none. */
  async function baseRequest(key: string, sample: { url: string; body?: unknown; raw?: Buffer; contentType?: string }) {
    const local = `${registry.address}/hostd-test/busybox:1`
    const overrides: Record<string, { url: string; body: unknown }> = {
      'POST /api/containers': { url: '/api/containers', body: { image: 'hostd-test/busybox:1', command: 'true' } },
      'POST /api/images/pull': { url: '/api/images/pull', body: { reference: local } },
      'POST /api/catalog/install': { url: '/api/catalog/install', body: { appId: 'fuzz', source: 'fuzz', values: {} } },
    }
    const chosen = overrides[key] ?? sample
    const json = 'body' in chosen ? chosen.body : undefined
    const raw = 'raw' in sample && !overrides[key] ? sample.raw : undefined
    return {
      url: chosen.url,
      json,
      body: raw ?? (json === undefined ? undefined : Buffer.from(JSON.stringify(json))),
      contentType: (!overrides[key] && sample.contentType) || (raw ? 'application/gzip' : 'application/json'),
    }
  }
})

function errorAnswer(err: Error): Answer {
  return { status: 0, body: err.message }
}
