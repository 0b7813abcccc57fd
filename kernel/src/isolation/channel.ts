/**
 * The kernel's end of the channel to one plugin process: frames in and out (sdk/src/isolated/protocol.ts), every
 * incoming message checked against its schema, calls with deadlines. Anything malformed ends the process: a plugin
 * that breaks the protocol is treated as hostile.
 */
import type { Duplex } from 'node:stream'
import Ajv, { type ValidateFunction } from 'ajv'
import { Type } from '@sinclair/typebox'
import {
  encodeFrame,
  FrameReader,
  MAX_CHILD_FRAME,
  protocolSchemas,
  type ChildMessage,
  type KernelCallMethod,
  type KernelMessage,
} from '../../../sdk/src/isolated/protocol.ts'

interface Validators {
  child: Map<string, ValidateFunction>
  results: Map<string, ValidateFunction>
}
let validators: Validators | undefined

/** The protocol's schemas compiled once (strict: no coercion, no defaults, unknown fields are errors). */
function compiled(): Validators {
  if (validators) return validators
  const ajv = new Ajv.default({ strict: false, allErrors: false, coerceTypes: false, useDefaults: false })
  const schemas = protocolSchemas(Type)
  validators = {
    child: new Map(Object.entries(schemas.child).map(([t, schema]) => [t, ajv.compile(schema)])),
    results: new Map(Object.entries(schemas.results).map(([m, schema]) => [m, ajv.compile(schema)])),
  }
  return validators
}

/** What is wrong with a message from a plugin's process, or null when it is well formed. */
export function childMessageProblem(message: unknown): string | null {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return 'a message is not an object'
  const t = (message as { t?: unknown }).t
  const validate = typeof t === 'string' ? compiled().child.get(t) : undefined
  if (!validate) return `a message of unknown kind ${JSON.stringify(t)?.slice(0, 40)}`
  if (validate(message)) return null
  const e = validate.errors?.[0]
  return `a malformed ${t} message (${e?.instancePath || '/'} ${e?.message ?? 'is invalid'})`
}

/** What is wrong with the value a successful kernel call answered, or null. */
export function resultProblem(method: KernelCallMethod, value: unknown): string | null {
  const validate = compiled().results.get(method)!
  if (validate(value)) return null
  const e = validate.errors?.[0]
  return `its answer to ${method} is malformed (${e?.instancePath || '/'} ${e?.message ?? 'is invalid'})`
}

/** A failed call: `timeout` when its deadline passed, `error` when the plugin answered with an error. */
export class CallError extends Error {
  override name = 'CallError'
  readonly kind: 'timeout' | 'error' | 'gone'
  readonly origin: string | undefined
  readonly code: string | undefined
  readonly status: number | undefined

  constructor(
    kind: 'timeout' | 'error' | 'gone',
    message: string,
    extra: { origin?: string; code?: string; status?: number } = {},
  ) {
    super(message)
    this.kind = kind
    this.origin = extra.origin
    this.code = extra.code
    this.status = extra.status
  }
}

interface PendingCall {
  method: KernelCallMethod
  resolve(value: unknown): void
  reject(err: Error): void
  timer: NodeJS.Timeout
}

export interface ChannelEvents {
  /** Every valid message that is not the answer to a call. */
  message(message: Exclude<ChildMessage, { t: 'result' }>): void
  /** The process broke the protocol: the owner kills it with this reason. */
  violation(reason: string): void
}

/** Frames, validation and calls over one duplex stream (the socketpair end the kernel keeps). */
export class Channel {
  readonly #stream: Duplex
  readonly #reader = new FrameReader(MAX_CHILD_FRAME)
  readonly #calls = new Map<number, PendingCall>()
  readonly #events: ChannelEvents
  #nextId = 0
  #closed: string | null = null

  constructor(stream: Duplex, events: ChannelEvents) {
    this.#stream = stream
    this.#events = events
    stream.on('data', (chunk: Buffer) => this.#receive(chunk))
    stream.on('error', () => undefined) // the process's exit says what happened
  }

  send(message: KernelMessage): void {
    if (this.#closed !== null) return
    // The frames of one turn of the event loop (requests arriving together on many connections under load) leave
    // in one write: uncorked after this turn's I/O callbacks, not after each one.
    if (!this.#corked) {
      this.#corked = true
      this.#stream.cork()
      setImmediate(this.#uncork)
    }
    this.#stream.write(encodeFrame(message))
  }

  #corked = false
  readonly #uncork = () => {
    this.#corked = false
    this.#stream.uncork()
  }

  /** Calls `method` in the plugin's process; rejects with a CallError after `timeoutMs`, or when the process goes. */
  call(method: KernelCallMethod, args: unknown[], timeoutMs: number): Promise<unknown> {
    if (this.#closed !== null) return Promise.reject(new CallError('gone', this.#closed))
    const id = this.#nextId++
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#calls.delete(id)
        reject(new CallError('timeout', `${method} did not finish within ${seconds(timeoutMs)}`))
      }, timeoutMs)
      this.#calls.set(id, { method, resolve, reject, timer })
      this.send({ t: 'call', id, method, args })
    })
  }

  /** Ends every call in flight with `reason` (the process is gone); later sends are dropped. */
  close(reason: string): void {
    if (this.#closed !== null) return
    this.#closed = reason
    for (const [id, call] of this.#calls) {
      clearTimeout(call.timer)
      this.#calls.delete(id)
      call.reject(new CallError('gone', reason))
    }
    this.#stream.destroy()
  }

  #receive(chunk: Buffer): void {
    if (this.#closed !== null) return
    let texts: string[]
    try {
      texts = this.#reader.push(chunk)
    } catch (err) {
      this.#events.violation(`it sent ${(err as Error).message}`)
      return
    }
    for (const text of texts) {
      let message: unknown
      try {
        message = JSON.parse(text)
      } catch {
        this.#events.violation('it sent a message that is not JSON')
        return
      }
      const problem = childMessageProblem(message)
      if (problem) {
        this.#events.violation(`it sent ${problem}`)
        return
      }
      const valid = message as ChildMessage
      if (valid.t === 'result') this.#settle(valid)
      else this.#events.message(valid)
      if (this.#closed !== null) return
    }
  }

  #settle(result: Extract<ChildMessage, { t: 'result' }>): void {
    const call = this.#calls.get(result.id)
    if (!call) return // answered after its deadline
    this.#calls.delete(result.id)
    clearTimeout(call.timer)
    if (!result.ok) {
      const e = result.error
      call.reject(new CallError('error', e?.message ?? 'failed', e))
      return
    }
    const problem = resultProblem(call.method, result.value)
    if (problem) {
      call.reject(new CallError('error', problem))
      this.#events.violation(`${problem}`)
      return
    }
    call.resolve(result.value)
  }
}

export const seconds = (ms: number): string => (ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`)
