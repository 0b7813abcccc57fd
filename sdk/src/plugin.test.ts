import { describe, expect, expectTypeOf, it } from 'vitest'
import { definePlugin, type UiList } from './plugin.ts'
import { createServiceToken } from './tokens.ts'

const page = { path: '/ok', title: 'Ok', module: 'ui/page.js', element: 'ok-page' }
const base = { id: 'ok', version: '1.0.0', kernel: '^1.0.0' }

describe('definePlugin and the 1.0.0 ui list (accepted until kernel API 2.0.0)', () => {
  it('turns a list of pages into { pages }, without the 1.0.0 id, and says what to change', () => {
    const plugin = definePlugin({ ...base, ui: [{ ...page, id: 'ok' }] })
    expect(plugin.ui).toEqual({ pages: [page] })
    expect(plugin.warnings).toEqual([expect.stringMatching(/^ui is a list \(the 1\.0\.0 shape\): write ui: \{ pages/)])
  })

  it('leaves out a 1.0.0 nav entry, which names nothing to mount, with a warning naming it', () => {
    const plugin = definePlugin({ ...base, ui: [page, { id: 'nav', title: 'Nav', path: '/nav' }] })
    expect(plugin.ui).toEqual({ pages: [page] })
    expect(plugin.warnings).toHaveLength(2)
    expect(plugin.warnings[1]).toBe('ui entry /nav is not shown: it names no module and element for the shell to mount')
  })

  it('checks the pages of a list as those of an object', () => {
    const list = (entries: unknown) => () => definePlugin({ ...base, ui: entries as UiList })
    expect(list([{ ...page, element: 'okpage' }])).toThrow(/custom element/)
    expect(list([{ ...page, module: 'src/index.ts' }])).toThrow(/ui\/ folder/)
    expect(list([page, page])).toThrow(/declared twice/)
  })

  it('warns of nothing for the current shape, or without a ui', () => {
    expect(definePlugin({ ...base, ui: { pages: [page] } }).warnings).toEqual([])
    expect(definePlugin(base).warnings).toEqual([])
  })
})

describe('definePlugin setup', () => {
  const counter = createServiceToken<{ start: number }>('test.counter')

  it('types the state every hook gets from what setup returns, and undefined without setup', () => {
    definePlugin({
      ...base,
      deps: { counter },
      setup: async ({ counter }) => ({ count: counter.start }),
      routes: (_r, deps, state) => {
        expectTypeOf(deps.counter).toEqualTypeOf<{ start: number }>()
        expectTypeOf(state).toEqualTypeOf<{ count: number }>()
      },
      sockets: (_s, _deps, state) => expectTypeOf(state).toEqualTypeOf<{ count: number }>(),
      provides: (_deps, state) => {
        expectTypeOf(state).toEqualTypeOf<{ count: number }>()
        return []
      },
      start: (_deps, state) => {
        expectTypeOf(state).toEqualTypeOf<{ count: number }>()
      },
      stop: (_deps, state) => {
        expectTypeOf(state).toEqualTypeOf<{ count: number }>()
      },
    })
    definePlugin({ ...base, routes: (_r, _deps, state) => expectTypeOf(state).toEqualTypeOf<undefined>() })
  })
})
