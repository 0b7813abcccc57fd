/**
 * A third-party plugin's pages run isolated whatever its manifest says (issue 26, item 4), in a real browser against
 * a spawned daemon: the greedy-upgrade fixture asks for `isolate: false`, and its page still runs in the sandboxed
 * frame, where the shell's bridge answers its own routes and refuses another plugin's routes and sockets (and a path
 * that climbs out of its prefix, or only looks like it), and neither the session cookie nor the shell's document can be read.
 */
import { cp } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startUi, type UiHarness } from '../../test/support/browser.ts'

const REPO = join(import.meta.dirname, '..', '..')

describe('web UI: a third-party page is isolated whatever its manifest says', { timeout: 120_000 }, () => {
  let ui: UiHarness
  beforeAll(async () => {
    ui = await startUi()
    const plugins = ui.daemon.pluginsDir
    await cp(join(REPO, 'test', 'fixtures', 'hostile-plugins', 'greedy-upgrade'), join(plugins, 'greedy-upgrade'), {
      recursive: true,
    })
    // Another plugin, whose route the greedy page asks for.
    await cp(join(REPO, 'test', 'ui', 'fixtures', 'isolated-plugin'), join(plugins, 'isolated'), { recursive: true })
  }, 120_000)
  afterAll(() => ui?.close())

  it('runs in the sandboxed frame, and the bridge refuses any route but its own', async () => {
    const page = await ui.open('viewer', '/greedy-upgrade')
    const frame = page.getByTitle('Greedy').contentFrame()
    await frame.getByRole('heading', { name: 'Greedy page' }).waitFor({ timeout: 20_000 })
    await frame.getByText('Own route: {"version":"1.0.0"}').waitFor()
    await frame.getByText('Other plugin: HOSTD_UI_BRIDGE_FORBIDDEN (403)').waitFor()
    await frame.getByText('Climb: HOSTD_UI_BRIDGE_FORBIDDEN (403)').waitFor()
    await frame.getByText('Look-alike: HOSTD_UI_BRIDGE_FORBIDDEN (403)').waitFor()
    await frame.getByText('Other socket: closed 4403').waitFor()
    await frame.getByText('Cookie: out of reach').waitFor()
    await frame.getByText('Shell: out of reach').waitFor()
    // Nothing of it is in the shell's own document.
    expect(await page.locator('greedy-page').count()).toBe(0)
    ui.assertNoCspViolations()
  })
})
