/** The desktop page's words for how a connection ended (ui/parts/ending.ts), for each close code of the README. */
import { describe, expect, it } from 'vitest'
import { explainEnding, explainWithStatus, type Ending } from '../ui/parts/ending.ts'

const end = (over: Partial<Ending>): Ending => ({ code: 1006, reason: '', opened: true, byUser: false, ...over })

describe('explainEnding', () => {
  it('names each close code the bridge and the kernel use', () => {
    expect(explainEnding(end({ byUser: true }))).toMatchObject({ title: 'Disconnected', canReconnect: true })
    expect(explainEnding(end({ code: 4408 }))).toMatchObject({
      title: 'Closed after a while without activity',
      canReconnect: true,
    })
    expect(explainEnding(end({ code: 4401, reason: 'session ended: signed out' }))).toMatchObject({
      title: 'Your session ended',
      detail: expect.stringMatching(/^Session ended: signed out\. /),
      canReconnect: false,
    })
    expect(explainEnding(end({ code: 4403 }))).toMatchObject({
      title: 'You may no longer use the desktop',
      canReconnect: false,
    })
    expect(explainEnding(end({ code: 1008 }))).toMatchObject({ detail: expect.stringMatching(/Too much input/) })
    expect(explainEnding(end({ code: 1012 }))).toMatchObject({ title: 'The desktop plugin was reloaded' })
    expect(explainEnding(end({ code: 1001 }))).toMatchObject({ title: 'hostd is restarting or shutting down' })
  })

  it("names a refused password with the server's reason, once punctuated", () => {
    expect(explainEnding(end({ code: 1000, securityFailure: { reason: 'password check failed!' } }))).toMatchObject({
      title: 'The VNC server refused the password',
      detail: 'Check the password and connect again. It said: password check failed.',
    })
    expect(explainEnding(end({ securityFailure: {} }))).toMatchObject({
      detail: 'Check the password and connect again.',
    })
  })

  it('asks for the status when only it can tell, then uses it', () => {
    for (const code of [1000, 1006, 1011]) expect(explainEnding(end({ code }))).toBe('check-status')
    expect(
      explainWithStatus(end({ code: 1006, opened: false }), {
        available: false,
        reason: 'No VNC server answers on 127.0.0.1:5900',
      }),
    ).toMatchObject({ title: 'Screen sharing is off', detail: 'No VNC server answers on 127.0.0.1:5900' })
    expect(explainWithStatus(end({ code: 1000 }), { available: true, reason: null })).toMatchObject({
      title: 'The VNC server ended the connection',
    })
    expect(explainWithStatus(end({ code: 1011 }), { available: true, reason: null })).toMatchObject({
      title: 'The connection to the VNC server failed',
    })
    expect(explainWithStatus(end({ code: 1006, opened: true }), null)).toMatchObject({
      title: 'The connection to hostd was lost',
    })
    expect(explainWithStatus(end({ code: 1006, opened: false }), null)).toMatchObject({
      title: 'The screen could not be reached',
    })
  })
})
