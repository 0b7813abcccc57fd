/**
 * The navigation's groups (issue 29, item 10): the shell's table puts the pages it knows into groups in its order with
 * its icons, a third-party page into "Add-ons" in name order, and no two links share an icon, whatever icons the
 * plugins asked for.
 */
import { describe, expect, it } from 'vitest'
import { groupNav, KNOWN_PAGES } from '../../ui/src/shell/nav.ts'

describe('navigation groups', () => {
  it('groups known pages in the table order, third-party ones by name, each with an icon of its own', () => {
    const groups = groupNav([
      { path: '/audit', title: 'Audit log', icon: 'scroll-text' },
      { path: '/zeta', title: 'Zeta', icon: 'container' },
      { path: '/containers', title: 'Containers', icon: 'container' },
      { path: '/branding', title: 'Branding', icon: 'sparkles' },
      { path: '/skills', title: 'Skills', icon: 'sparkles' },
      { path: '/', title: 'Overview', icon: 'layout-dashboard' },
      { path: '/alpha', title: 'alpha', icon: 'rocket' },
      { path: '/catalog', title: 'App catalog', icon: 'store' },
      { path: '/users', title: 'Users', icon: 'users' },
      { path: '/beta', title: 'Beta' },
    ])
    expect(groups.map((g) => [g.name, g.items.map((i) => i.title)])).toEqual([
      ['', ['Overview']],
      ['Apps', ['App catalog', 'Containers', 'Skills']],
      ['Accounts', ['Users', 'Audit log']],
      ['Settings', ['Branding']],
      ['Add-ons', ['alpha', 'Beta', 'Zeta']],
    ])
    const icons = groups.flatMap((g) => g.items.map((i) => i.icon))
    expect(new Set(icons).size).toBe(icons.length)
    // Branding and Skills both asked for "sparkles", Zeta for the containers' icon, alpha for one the kit lacks
    // (it would draw the puzzle piece of Plugins): each gets one of its own.
    const icon = (title: string) => groups.flatMap((g) => g.items).find((i) => i.title === title)!.icon
    expect(icon('Branding')).not.toBe(icon('Skills'))
    expect(icon('Zeta')).not.toBe('container')
    expect(icon('alpha')).not.toBe('rocket')
    expect(icon('alpha')).not.toBe('puzzle')
    const all = Object.values(KNOWN_PAGES).map((k) => k.icon)
    expect(new Set(all).size).toBe(all.length)
  })
})
