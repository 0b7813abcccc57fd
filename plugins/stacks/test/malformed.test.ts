// biome-ignore-all lint/suspicious/noTemplateCurlyInString: compose files write ${VAR} in plain strings
/**
 * Odd and hostile compose files and .env files (NUL, lone surrogates, alias bombs and cycles, wrong types, values
 * the containers plugin refuses) through validate, create and deploy, with no engine: every answer is a 4xx with a
 * code, or the engine's 503; never a 500.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestKernel } from '@hostd/sdk/testing'
import { expect, it } from 'vitest'
import containers from '../../containers/src/index.ts'
import { createStacksPlugin } from '../src/index.ts'

it('answers odd files with a 4xx, never a 5xx', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'fz-'))
  const t = await startTestKernel({
    plugins: [containers, createStacksPlugin({ dir })],
    env: { DOCKER_HOST: 'unix:///nonexistent.sock' },
  })
  const composes = [
    'a\u0000b',
    '\ud800',
    'services: null',
    'services: {a: null}',
    '[1,2]',
    '42',
    '',
    'x: &a [*a]',
    [
      'a: &a ["lol","lol"]',
      'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]',
      'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]',
      'd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]',
      'e: [*d,*d,*d,*d,*d,*d,*d,*d,*d]',
      'services: {}',
    ].join('\n'),
    'services:\n  a:\n    image: x\n    ports: [{target: 80, published: "8080-8081"}]\n',
    'services:\n  a:\n    image: x\n    volumes: [{type: volume, target: /x}]\n',
    'services:\n  a:\n    image: x\n    depends_on: {b: null}\n  b: {image: y}\n',
    'services:\n  a:\n    image: x\n    env_file: [{path: "\u0000"}]\n',
    'services:\n  a:\n    image: x\n    environment: ["=x", "A"]\n',
    'services:\n  a:\n    image: "\ud800x"\n',
    'services:\n  a:\n    image: x\n    healthcheck: {test: []}\n',
    'services:\n  a:\n    image: x\n    networks: {nope: null}\n',
    'services:\n  a:\n    image: "${A:-${B:-${C}}}"\n',
    'services:\n  a:\n    image: "$"\n',
    'services:\n  a:\n    image: x\n    command: [1, true, null]\n',
    'services:\n  a:\n    image: x\n    mem_limit: 1e999\n',
    'services:\n  a:\n    image: x\n    cpus: -1\n',
    'services:\n  a:\n    image: x\n    ports: ["99999:1"]\n',
    'services:\n  a:\n    image: "bad image ref!!"\n',
    'services:\n  a:\n    image: x\n    stop_grace_period: 1e308s\n',
    'services:\n  a:\n    image: x\n    restart: sometimes\n',
    'services:\n  a:\n    image: x\n    user: "\u0000"\n',
    'services:\n  a:\n    image: x\n    labels: {"dev.hostd.x": "y"}\n',
    'services:\n  a:\n    image: x\n    labels: {"": "y"}\n',
    'services:\n  a:\n    image: x\n    container_name: "../../x"\n',
    'services:\n  a:\n    image: x\n    hostname: "-bad"\n',
    'services:\n  a:\n    image: x\n    devices: ["relative"]\n',
    'services:\n  a:\n    image: x\n    tmpfs: relative\n',
    'services:\n  a:\n    image: x\n    dns: "not-an-ip"\n',
    'services:\n  a:\n    image: x\n    healthcheck: {test: "x", interval: "forever"}\n',
    'name: other\nservices:\n  a: {image: x}\n',
    'services:\n  __proto__: {image: x}\n',
    'services:\n  a: {image: x, x-foo: 1}\nx-bar: 2\n',
  ]
  const bad: string[] = []
  let i = 0
  for (const compose of composes) {
    for (const env of ['', 'A=\u0000', 'export', '\ud800=1', 'A="unclosed']) {
      const v = await t.inject({
        method: 'POST',
        url: '/api/stacks/validate',
        as: 'admin',
        payload: { name: 'fz', compose, env },
      })
      if (v.statusCode >= 500) bad.push(`validate ${JSON.stringify(compose).slice(0, 60)} ${v.body}`)
    }
    const name = `fz${i++}`
    const c = await t.inject({ method: 'POST', url: '/api/stacks', as: 'admin', payload: { name, compose } })
    if (c.statusCode >= 500) bad.push(`create ${JSON.stringify(compose).slice(0, 60)} ${c.body}`)
    if (c.statusCode === 201) {
      const d = await t.inject({ method: 'POST', url: `/api/stacks/${name}/deploy`, as: 'operator', payload: {} })
      if (d.statusCode >= 500 && d.json().error !== 'HOSTD_CONTAINERS_ENGINE_UNAVAILABLE')
        bad.push(`deploy ${JSON.stringify(compose).slice(0, 60)} ${d.body}`)
    }
  }
  for (const p of ['/api/stacks/x/services/%00/start', '/api/stacks/ABC', '/api/stacks/a/deploy']) {
    const r = await t.inject({ method: 'POST', url: p, as: 'admin', payload: { profiles: ['\u0000'] } })
    if (r.statusCode >= 500) bad.push(`${p} ${r.body}`)
  }
  const list = await t.inject({ url: '/api/stacks', as: 'viewer' })
  if (list.statusCode >= 500) bad.push(`list ${list.body}`)
  // The self-referring alias, named as such.
  const cycle = await t.inject({
    method: 'POST',
    url: '/api/stacks/validate',
    as: 'admin',
    payload: { name: 'fz', compose: 'x: &a [*a]' },
  })
  expect(cycle.json().issues[0].message).toContain('a cycle')
  await t.close()
  await rm(dir, { recursive: true, force: true })
  expect(bad).toEqual([])
}, 120000)
