/** The terminal socket's shapes: its query and the control frames a client may send as text. See README.md. */
import { Type, type Static } from '@hostd/sdk'

export const COLS = { minimum: 1, maximum: 1000 }
export const ROWS = { minimum: 1, maximum: 500 }

/** `/api/terminal?cols=&rows=`: the size to start the PTY with (80×24 without). */
export const TerminalQuery = Type.Object({
  cols: Type.Optional(Type.Integer(COLS)),
  rows: Type.Optional(Type.Integer(ROWS)),
})

export const ResizeFrame = Type.Object(
  {
    type: Type.Literal('resize'),
    cols: Type.Integer(COLS),
    rows: Type.Integer(ROWS),
  },
  { additionalProperties: false },
)

/** Client-side flow control: `pause` stops reading the PTY until `resume` (the server's own watermarks apply too). */
export const FlowFrame = Type.Object(
  {
    type: Type.Union([Type.Literal('pause'), Type.Literal('resume')]),
  },
  { additionalProperties: false },
)

export const ControlFrame = Type.Union([ResizeFrame, FlowFrame])
export type ControlFrame = Static<typeof ControlFrame>

/** A text frame longer than this is not a control frame. */
export const MAX_CONTROL_FRAME_BYTES = 1024
