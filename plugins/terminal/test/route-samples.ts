/** The terminal plugin serves no HTTP route, only the `/api/terminal` socket (tested in terminal.test.ts). */
import type { RouteSamples } from '@hostd/sdk/testing'

export const samples: RouteSamples = {}
