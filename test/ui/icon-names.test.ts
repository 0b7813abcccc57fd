/**
 * One list of icon names (issue 28, item 8): the sdk's ICON_NAMES, which plugin authors type against and the kernel
 * checks pages with, is exactly the set the UI kit draws. The type check says so too (ui/src/kit/icons.tsx is a
 * Record<IconName, ...>); this proves it at run time, against the module the shell ships.
 */
import { describe, expect, it } from 'vitest'
import { ICON_NAMES } from '@hostd/sdk'
import { iconNames } from '../../ui/src/kit/icons.tsx'

describe('icon names', () => {
  it('the sdk lists exactly the icons the kit draws', () => {
    expect([...iconNames].sort()).toEqual([...ICON_NAMES].sort())
    expect(new Set(ICON_NAMES).size).toBe(ICON_NAMES.length)
  })
})
