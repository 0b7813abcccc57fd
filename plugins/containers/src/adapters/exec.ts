/**
 * A console into a running container: the engine's exec API with a TTY (create, start hijacked, resize), wired to
 * one WebSocket with the host terminal's protocol (plugins/terminal/README.md): output as binary frames, input as
 * binary frames, text frames for control (`resize`, `pause`, `resume`). Flow control as the terminal's: the engine's
 * stream is paused while the socket holds more than HIGH_WATER unsent bytes (or the client asked for a pause) and
 * resumed below LOW_WATER, so a flood keeps the daemon's memory bounded. Whatever ends it (the process exits, the
 * socket closes, the session ends), the other side is closed; a process still running then gets SIGHUP from the
 * engine closing its TTY, and is killed if it ignores that.
 */
import type { Duplex } from 'node:stream'
import type Docker from 'dockerode'
import { findDuplicateKey, Type, type Static } from '@hostd/sdk'
import { Value } from '@sinclair/typebox/value'
import type { WebSocket } from 'ws'
import { ContainerErrors } from '../errors.ts'

export const EXEC_FLOW = { highWater: 1024 * 1024, lowWater: 256 * 1024, pollMs: 10 } as const

/** The shells a console may start (the first one the image has is what people want; the page lets them pick). */
export const EXEC_SHELLS = ['/bin/sh', '/bin/bash', '/bin/ash'] as const

export const ExecQuery = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 256, pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]*$' }),
  shell: Type.Optional(Type.Union(EXEC_SHELLS.map((s) => Type.Literal(s)))),
  cols: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  rows: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
})
export type ExecQuery = Static<typeof ExecQuery>

const ControlFrame = Type.Union([
  Type.Object(
    {
      type: Type.Literal('resize'),
      cols: Type.Integer({ minimum: 1, maximum: 1000 }),
      rows: Type.Integer({ minimum: 1, maximum: 500 }),
    },
    { additionalProperties: false },
  ),
  Type.Object({ type: Type.Union([Type.Literal('pause'), Type.Literal('resume')]) }, { additionalProperties: false }),
])
type ControlFrame = Static<typeof ControlFrame>

export interface ExecEnd {
  ended: 'exit' | 'closed'
  seconds: number
  exitCode: number | null
}

export interface ExecOptions {
  docker: Docker
  containerId: string
  shell: string
  cols: number
  rows: number
  socket: WebSocket
  signal: AbortSignal
  onEnd(end: ExecEnd): void
}

/** Starts the exec and wires it to the socket; resolves once it runs (rejects when the engine refuses). */
export async function startExec(o: ExecOptions): Promise<{ execId: string }> {
  const container = o.docker.getContainer(o.containerId)
  const exec = await container.exec({
    Cmd: [o.shell],
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: true,
    // No COLUMNS/LINES: they would outlive a resize (busybox and others read them before the TTY's size).
    Env: ['TERM=xterm-256color'],
  })
  const stream = (await exec.start({ hijack: true, stdin: true, Detach: false, Tty: true })) as Duplex
  const startedAt = Date.now()
  const { socket } = o
  let finished = false
  let throttled = false
  let clientPaused = false
  let streamPaused = false
  let flowTimer: NodeJS.Timeout | null = null
  const resize = (cols: number, rows: number) => exec.resize({ w: cols, h: rows }).catch(() => undefined)
  void resize(o.cols, o.rows)

  const applyFlow = () => {
    const pause = !finished && (throttled || clientPaused)
    if (pause !== streamPaused) {
      streamPaused = pause
      if (pause) stream.pause()
      else stream.resume()
    }
    if (pause && !flowTimer)
      flowTimer = setInterval(() => {
        if (throttled && socket.bufferedAmount < EXEC_FLOW.lowWater) throttled = false
        applyFlow()
      }, EXEC_FLOW.pollMs)
    if (!pause && flowTimer) {
      clearInterval(flowTimer)
      flowTimer = null
    }
  }

  const sendJson = (message: Record<string, unknown>) => {
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message))
  }

  const finish = async (ended: ExecEnd['ended']) => {
    if (finished) return
    finished = true
    if (flowTimer) clearInterval(flowTimer)
    stream.destroy()
    let exitCode: number | null = null
    let running = false
    let pid = 0
    try {
      const info = await exec.inspect()
      exitCode = info.Running ? null : (info.ExitCode ?? null)
      running = info.Running
      pid = info.Pid
    } catch {
      // The container went away with it.
    }
    if (ended === 'exit') {
      sendJson({ type: 'exit', code: exitCode, signal: null })
      if (socket.readyState === socket.OPEN) socket.close(1000, 'process exited')
    } else if (running && pid > 0) {
      // The engine closes the TTY when the attach goes (the shell gets SIGHUP); one that ignores it is ended.
      setTimeout(() => {
        exec
          .inspect()
          .then((info) => {
            if (info.Running && info.Pid === pid) process.kill(pid, 'SIGKILL')
          })
          .catch(() => undefined)
      }, 1000).unref()
    }
    o.onEnd({ ended, seconds: Math.round((Date.now() - startedAt) / 100) / 10, exitCode })
  }

  stream.on('data', (chunk: Buffer) => {
    if (finished || socket.readyState !== socket.OPEN) return
    socket.send(chunk, { binary: true })
    if (socket.bufferedAmount > EXEC_FLOW.highWater) {
      throttled = true
      applyFlow()
    }
  })
  stream.on('end', () => void finish('exit'))
  stream.on('close', () => void finish('exit'))
  stream.on('error', () => void finish('exit'))
  socket.on('message', (data: Buffer, isBinary: boolean) => {
    if (finished) return
    if (isBinary) {
      stream.write(data)
      return
    }
    const frame = controlFrame(data)
    if (typeof frame === 'string') {
      sendJson({ type: 'error', error: ContainerErrors.execFrameInvalid.code, message: frame })
      return
    }
    if (frame.type === 'resize') void resize(frame.cols, frame.rows)
    else {
      clientPaused = frame.type === 'pause'
      applyFlow()
    }
  })
  socket.once('close', () => void finish('closed'))
  o.signal.addEventListener('abort', () => void finish('closed'), { once: true })
  sendJson({ type: 'ready', container: o.containerId, shell: o.shell, cols: o.cols, rows: o.rows })
  return { execId: exec.id }
}

function controlFrame(data: Buffer): ControlFrame | string {
  if (data.length > 1024) return 'A text frame is a control frame of at most 1024 bytes; send input as binary frames'
  const text = data.toString('utf8')
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return 'A text frame must be a JSON control frame; send input as binary frames'
  }
  if (findDuplicateKey(text) !== null || !Value.Check(ControlFrame, value))
    return 'Unknown or invalid control frame: text frames are {"type":"resize","cols":1..1000,"rows":1..500}, {"type":"pause"} or {"type":"resume"}'
  return value
}
