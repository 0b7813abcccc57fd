/**
 * A terminal ends with the session that opened it: sign-out, the user disabled, or demoted below admin. The kernel
 * closes the socket (4401 session ended, 4403 role too low: docs/API.md, "Sockets and streams end with their
 * session") and aborts the socket's context; the plugin then ends every process of the shell's session.
 *
 * These need the kernel's close-on-revoke (LiveConnections, branch hardening-kernel): without it they time out.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestKernel, type TestKernel } from '@hostd/sdk/testing'
import { ensureTestAccount } from '../../../test/support/unix-user.ts'
import { terminalPlugin } from '../src/index.ts'
import { running, TerminalClient, until } from './support.ts'

describe('terminal ends with its session', () => {
  let t: TestKernel
  let boss: string
  beforeAll(async () => {
    const account = await ensureTestAccount()
    t = await startTestKernel({ plugins: [terminalPlugin({ user: account.name })], listen: true })
    boss = (await t.login('admin', 'revoke-boss')).token
  })
  afterAll(() => t.close())

  /** An admin with a terminal running a shell and a background job. */
  async function openTerminal(name: string) {
    const who = await t.login('admin', name)
    const c = new TerminalClient(`${t.url!.replace(/^http/, 'ws')}/api/terminal`, { token: who.token })
    const { pid } = await c.waitForFrame('ready')
    const jobPid = Number((await c.run('sleep 1003 & echo $!')).split('\n').at(-1))
    expect(await running(jobPid)).toBe(true)
    return { ...who, c, pids: [pid as number, jobPid] }
  }
  const gone = (pids: number[]) => until(async () => (await Promise.all(pids.map(running))).every((r) => !r))

  it('sign-out closes the socket (4401) and ends the shell and its jobs', async () => {
    const { c, token, pids } = await openTerminal('revoke-signout')
    expect((await t.inject({ method: 'POST', url: '/api/auth/logout', as: { token } })).statusCode).toBe(204)
    expect((await c.closed).code).toBe(4401)
    await gone(pids)
  })

  it('disabling the user closes the socket (4401) and ends the shell', async () => {
    const { c, userId, pids } = await openTerminal('revoke-disabled')
    const res = await t.inject({
      method: 'POST',
      url: `/api/users/${userId}/disabled`,
      as: { token: boss },
      payload: { disabled: true },
    })
    expect(res.statusCode).toBe(204)
    expect((await c.closed).code).toBe(4401)
    await gone(pids)
  })

  it('demotion below admin closes the socket (4403) and ends the shell', async () => {
    const { c, userId, pids } = await openTerminal('revoke-demoted')
    const res = await t.inject({
      method: 'POST',
      url: `/api/users/${userId}/role`,
      as: { token: boss },
      payload: { role: 'operator' },
    })
    expect(res.statusCode).toBe(204)
    expect((await c.closed).code).toBe(4403)
    await gone(pids)
  })
})
