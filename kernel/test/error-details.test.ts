import { defineError } from '@hostd/sdk'
import Fastify from 'fastify'
import { describe, expect, it } from 'vitest'
import { errorHandler } from '../src/http/errors.ts'

const portInUse = defineError('HOSTD_TEST_PORT_IN_USE', 409, 'The port is in use')

describe('error details', () => {
  it('sends a translated error with the raw text under details, and none when there is none', async () => {
    const app = Fastify()
    app.setErrorHandler(errorHandler)
    app.get('/translated', async () => {
      throw portInUse('Port 8082 is used by web-8082', {}, { raw: 'driver failed programming external connectivity' })
    })
    app.get('/plain', async () => {
      throw portInUse()
    })
    const translated = await app.inject('/translated')
    expect(translated.statusCode).toBe(409)
    expect(translated.json()).toEqual({
      error: 'HOSTD_TEST_PORT_IN_USE',
      message: 'Port 8082 is used by web-8082',
      details: { raw: 'driver failed programming external connectivity' },
    })
    expect((await app.inject('/plain')).json()).toEqual({
      error: 'HOSTD_TEST_PORT_IN_USE',
      message: 'The port is in use',
    })
    await app.close()
  })
})
