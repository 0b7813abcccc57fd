/**
 * The plugin page contract in a real browser: a third-party page that asks for isolation runs in the sandboxed
 * frame (opaque origin, its own CSP), reaches its own routes through the shell's bridge and nothing else.
 * (The hello plugin's hot-load test, the pattern for a plugin's own browser test, is in examples/hello-plugin/test.)
 */
import { cp } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../support/browser.ts'

describe('web UI: an isolated plugin page', { timeout: 120_000 }, () => {
  let ui: UiHarness
  beforeAll(async () => {
    ui = await startUi()
    await cp(join(import.meta.dirname, 'fixtures', 'isolated-plugin'), join(ui.daemon.pluginsDir, 'isolated'), {
      recursive: true,
    })
  }, 120_000)
  afterAll(() => ui?.close())

  it('runs in a sandboxed frame that may call only its own plugin routes', async () => {
    const page = await ui.open('viewer', '/isolated')
    const frame = page.getByTitle('Isolated').contentFrame()
    await frame.getByRole('heading', { name: 'Isolated page' }).waitFor({ timeout: 20_000 })
    await frame.getByText(/^Own route: pong for viewer/).waitFor()
    await frame.getByText('Kernel route: HOSTD_UI_BRIDGE_FORBIDDEN (403)').waitFor()
    await frame.getByText('The shell is out of reach').waitFor()
    await expectAccessible(page, 'isolated page')
    await screenshot(page, 'plugin-isolated')
    // The frame document is sandboxed by its own CSP even when opened on its own, and only the shell may frame it.
    const res = await ui.daemon.fetch('/ui/frame.html')
    expect(res.headers.get('content-security-policy')).toMatch(
      /^sandbox allow-scripts allow-forms; .*connect-src 'none'.*frame-ancestors 'self'/,
    )
    expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN')
    ui.assertNoCspViolations()
  })
})
