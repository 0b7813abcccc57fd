import { describe, expect, it } from 'vitest'
import { auditOutcome } from './audit.ts'
import { HostdError } from './errors.ts'
import type { AuditEvent } from './tokens.ts'

describe('auditOutcome', () => {
  const recorder = () => {
    const records: AuditEvent[] = []
    return { records, audit: { record: async (event: AuditEvent) => void records.push(event) } }
  }

  it('records a success with its detail and returns the result', async () => {
    const { records, audit } = recorder()
    const out = await auditOutcome(
      audit,
      { action: 'thing.make', target: 't' },
      undefined,
      async () => 42,
      (n) => ({ n }),
    )
    expect(out).toBe(42)
    expect(records).toEqual([{ action: 'thing.make', target: 't', result: 'success', detail: { n: 42 } }])
  })

  it('records a failure with the error’s code and message, and throws the same error', async () => {
    const { records, audit } = recorder()
    const err = new HostdError('HOSTD_THING_BAD', 400, 'bad thing')
    await expect(
      auditOutcome(audit, { action: 'thing.make', target: null }, undefined, async () => {
        throw err
      }),
    ).rejects.toBe(err)
    expect(records).toEqual([
      {
        action: 'thing.make',
        target: null,
        result: 'failure',
        detail: { error: 'HOSTD_THING_BAD', message: 'bad thing' },
      },
    ])
  })
})
