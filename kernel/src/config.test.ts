import { describe, expect, it } from 'vitest'
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, loadConfig } from './config.ts'

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({ HOSTD_DATA_DIR: '/var/lib/hostd' })
    expect(c.port).toBe(4443)
    expect(c.pluginsDir).toBe('/var/lib/hostd/plugins')
    expect(c.tlsCert).toBe('/var/lib/hostd/tls/cert.pem')
    expect(c.dockerHost).toBeNull()
  })

  it('reads every documented variable', () => {
    const c = loadConfig({
      HOSTD_PORT: '8443',
      HOSTD_HOST: '127.0.0.1',
      HOSTD_DATA_DIR: '/d',
      HOSTD_PLUGINS_DIR: '/p',
      HOSTD_HELPER_SOCKET: '/run/h.sock',
      DOCKER_HOST: 'unix:///run/docker.sock',
    })
    expect(c).toMatchObject({
      port: 8443,
      host: '127.0.0.1',
      dataDir: '/d',
      pluginsDir: '/p',
      helperSocket: '/run/h.sock',
      dockerHost: 'unix:///run/docker.sock',
    })
  })

  it.each([
    [{ HOSTD_PORT: 'abc' }, /HOSTD_PORT="abc" is not a whole number/],
    [{ HOSTD_PORT: '70000' }, /out of range/],
    [{ HOSTD_HOST: 'bad host;' }, /HOSTD_HOST/],
    [{ DOCKER_HOST: '/var/run/docker.sock' }, /DOCKER_HOST/],
    [{ HOSTD_TLS_CERT: '/c.pem' }, /go together/],
    [{ HOSTD_LOG_LEVEL: 'loud' }, /HOSTD_LOG_LEVEL/],
    [{ HOSTD_CONFIG: '/nonexistent/hostd.json' }, /no such file/],
  ])('refuses %j with one clear message', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError)
    expect(() => loadConfig(env)).toThrow(message)
  })

  it('takes a JSON config file, with the environment winning', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hostd-cfg-'))
    try {
      const file = join(dir, 'hostd.json')
      writeFileSync(file, JSON.stringify({ HOSTD_PORT: 9443, HOSTD_HOST: '::1' }))
      expect(loadConfig({ HOSTD_CONFIG: file })).toMatchObject({ port: 9443, host: '::1' })
      expect(loadConfig({ HOSTD_CONFIG: file, HOSTD_PORT: '7443' }).port).toBe(7443)
      writeFileSync(file, JSON.stringify({ HOSTD_PROT: 1 }))
      expect(() => loadConfig({ HOSTD_CONFIG: file })).toThrow(/unknown key "HOSTD_PROT"/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
