// biome-ignore-all lint/suspicious/noTemplateCurlyInString: compose files write ${VAR} in plain strings
/**
 * The model without an engine: interpolation and .env, the compose specification's schema, the keys hostd
 * translates (others refused by path and line), env_file confined to the folder, profiles, depends_on.
 */
import { mkdtemp, mkdir, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { interpolateString, parseEnvFile, type InterpolationIssue } from '../src/model/interpolate.ts'
import { loadProject, type LoadInput } from '../src/model/compose.ts'
import { ComposeValidator, composeSchemaPath } from '../src/model/validator.ts'
import { readFileSync } from 'node:fs'

const validator = new ComposeValidator()
const load = (compose: string, extra: Partial<LoadInput> = {}) =>
  loadProject(
    { name: 'demo', dir: '/srv/stacks/demo', compose, env: '', readFile: async () => null, ...extra },
    validator,
  )

describe('interpolation', () => {
  const vars = new Map([
    ['A', 'one'],
    ['EMPTY', ''],
  ])
  const run = (text: string) => {
    const issues: InterpolationIssue[] = []
    return { out: interpolateString(text, vars, 'x', issues), issues }
  }

  it('reads every form compose defines', () => {
    expect(run('$A ${A} ${A:-d} ${B:-d} ${EMPTY:-d} ${EMPTY-d} ${A:+r} ${B:+r} $$A ${B:-${A}}').out).toBe(
      'one one one d d  r  $A one',
    )
  })

  it('reports a required variable with its message, and an unset one as a warning', () => {
    expect(run('${B:?set B in .env}').issues).toEqual([{ path: 'x', message: 'variable B is required: set B in .env' }])
    expect(run('${EMPTY?}').issues).toEqual([])
    expect(run('${EMPTY:?}').issues[0]!.message).toBe('variable EMPTY is required')
    expect(run('$B').issues[0]!.warning).toBe(true)
    expect(run('${A').issues[0]!.message).toContain('without its')
  })

  it('parses .env: comments, export, quotes, escapes, inline comments, bad lines', () => {
    const errors: { line: number; message: string }[] = []
    const vars = parseEnvFile('# c\nexport A=1\nB = "x\\ny" \nC=\'$raw\'\nD=plain # note\nnot a line\nE=', errors)
    expect(Object.fromEntries(vars)).toEqual({ A: '1', B: 'x\ny', C: '$raw', D: 'plain', E: '' })
    expect(errors).toEqual([{ line: 6, message: 'line 6 is not NAME=value' }])
  })
})

describe('compose files', () => {
  it('uses the schema dclint ships (compose-spec, current)', () => {
    const schema = JSON.parse(readFileSync(composeSchemaPath(), 'utf8'))
    expect(schema.title).toBe('Compose Specification')
    expect(schema.properties.services).toBeDefined()
  })

  it('translates a three-service file with variables, a volume, a network and depends_on', async () => {
    const out = await load(
      [
        'services:',
        '  web:',
        '    image: ${IMAGE}',
        '    ports: ["127.0.0.1:${PORT:-8080}:80"]',
        '    environment: { GREETING: "${GREETING:-hi}", FROM_ENV: }',
        '    depends_on: { db: { condition: service_healthy } }',
        '    networks: [back]',
        '  db:',
        '    image: ${IMAGE}',
        '    volumes: ["data:/data"]',
        '    healthcheck: { test: "cat /data/ready", interval: 1s500ms, retries: 3 }',
        '    networks: { back: { aliases: [database] } }',
        '    deploy: { resources: { limits: { memory: 64m, cpus: "0.5" } } }',
        '  worker:',
        '    image: ${IMAGE}',
        '    depends_on: [db]',
        '    profiles: [jobs]',
        'networks: { back: {} }',
        'volumes: { data: {} }',
      ].join('\n'),
      { env: 'IMAGE=example/app:1\nFROM_ENV=yes\nCOMPOSE_PROFILES=jobs\n' },
    )
    if (!out.ok) throw new Error(JSON.stringify(out.issues))
    const { services, networks, volumes } = out.project
    expect([...services.keys()]).toEqual(['web', 'db', 'worker'])
    const web = services.get('web')!
    expect(web.spec).toMatchObject({
      image: 'example/app:1',
      name: 'demo-web-1',
      ports: ['127.0.0.1:8080:80'],
      env: ['GREETING=hi', 'FROM_ENV=yes'],
      network: 'demo_back',
    })
    expect(web.options.aliases).toEqual(['web'])
    expect(web.dependsOn).toEqual([{ service: 'db', condition: 'service_healthy', required: true }])
    const db = services.get('db')!
    expect(db.spec).toMatchObject({ volumes: ['demo_data:/data'], memory: '64m', cpus: 0.5 })
    expect(db.options.healthcheck).toEqual({ test: ['CMD-SHELL', 'cat /data/ready'], interval: 1.5e9, retries: 3 })
    expect(db.options.aliases).toEqual(['db', 'database'])
    expect(networks.get('back')!.name).toBe('demo_back')
    expect(volumes.get('data')!.name).toBe('demo_data')
  })

  it('leaves out a service whose profile is off', async () => {
    const out = await load('services:\n  a: { image: x }\n  b: { image: x, profiles: [debug] }\n')
    expect(out.ok && [...out.project.services.keys()]).toEqual(['a'])
    const on = await load('services:\n  a: { image: x }\n  b: { image: x, profiles: [debug] }\n', {
      profiles: ['debug'],
    })
    expect(on.ok && [...on.project.services.keys()]).toEqual(['a', 'b'])
  })

  it('refuses keys hostd does not translate, by path and line', async () => {
    const out = await load('services:\n  web:\n    image: x\n    build: .\n    expose: ["80"]\nconfigs: {}\n')
    expect(out.ok).toBe(false)
    if (out.ok) return
    expect(out.issues.map((i) => [i.kind, i.path, i.line])).toEqual([
      ['unsupported', 'configs', 6],
      ['unsupported', 'services.web.build', 4],
      ['unsupported', 'services.web.expose', 5],
    ])
  })

  it('reports YAML and schema errors with their lines, and a required variable', async () => {
    const yaml = await load('services:\n  web:\n    image: x\n   bad: [\n')
    expect(!yaml.ok && yaml.issues[0]!.kind).toBe('yaml')
    const schema = await load('services:\n  web:\n    image: x\n    restart: 3\n    colour: red\n')
    expect(!schema.ok && schema.issues.map((i) => [i.path, i.line])).toEqual([
      ['services.web.colour', 5],
      ['services.web.restart', 4],
    ])
    const required = await load('services:\n  web:\n    image: ${IMAGE:?give an image}\n')
    expect(!required.ok && required.issues[0]).toMatchObject({
      kind: 'interpolation',
      line: 3,
      message: 'variable IMAGE is required: give an image',
    })
  })

  it('reads env_file inside the folder only, and finds undefined references and cycles', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'stacks-model-'))
    await mkdir(join(dir, 'conf'))
    await writeFile(join(dir, 'conf', 'app.env'), 'A=1\nB=2\n')
    const readFile = async (rel: string) => (rel === 'conf/app.env' ? 'A=1\nB=2\n' : null)
    const ok = await load('services:\n  web:\n    image: x\n    env_file: conf/app.env\n    environment: [B=3]\n', {
      dir,
      readFile,
    })
    expect(ok.ok && ok.project.services.get('web')!.spec.env).toEqual(['A=1', 'B=3'])
    const outside = await load('services:\n  web:\n    image: x\n    env_file: ../../etc/passwd\n', { dir, readFile })
    expect(!outside.ok && outside.issues[0]!.message).toContain("only files inside the stack's folder")
    const refs = await load(
      'services:\n  a: { image: x, depends_on: [b], volumes: ["nope:/d"] }\n  b: { image: x, depends_on: [a] }\n',
    )
    expect(!refs.ok && refs.issues.map((i) => i.message)).toEqual([
      'volume nope is not declared under the top-level volumes',
    ])
    const cycle = await load('services:\n  a: { image: x, depends_on: [b] }\n  b: { image: x, depends_on: [a] }\n')
    expect(!cycle.ok && cycle.issues.map((i) => i.message)).toEqual(['depends_on makes a cycle: a -> b -> a'])
  })

  it('notes every key that reaches the host, with its path', async () => {
    const out = await load(
      [
        'services:',
        '  x:',
        '    image: x',
        '    privileged: true',
        '    volumes: ["./data:/data", "/etc:/host-etc:ro"]',
        '    devices: ["/dev/null"]',
        '    cap_add: [CHOWN, SYS_ADMIN]',
        '    network_mode: host',
        '    pid: host',
      ].join('\n'),
    )
    if (!out.ok) throw new Error(JSON.stringify(out.issues))
    const x = out.project.services.get('x')!
    expect(x.hostKeys.map((k) => k.path)).toEqual([
      'services.x.volumes[0]',
      'services.x.volumes[1]',
      'services.x.network_mode',
      'services.x.privileged',
      'services.x.cap_add',
      'services.x.devices',
      'services.x.pid',
    ])
    expect(x.spec.volumes).toEqual(['/srv/stacks/demo/data:/data', '/etc:/host-etc:ro'])
    expect(x.spec.extraArgs).toEqual(['--privileged', '--pid', 'host'])
  })
})
