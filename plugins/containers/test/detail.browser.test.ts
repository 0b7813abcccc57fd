/**
 * The container detail page and the run form in a real browser against a real engine (issue 29 items 6, 7, 9, 13):
 * the log searched, with timestamps and downloaded; a console into the container (xterm.js over the exec API) for
 * admins; edit and recreate keeping the name; the restart policy and hostd's auto-start in words; the red removal
 * dialog with its volume choices; the run form's rows, placeholders, restart default and translated engine error.
 * Light and dark screenshots, desktop and phone. One daemon, one browser.
 */
import { readFile } from 'node:fs/promises'
import { eventually } from '@hostd/sdk/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectAccessible, screenshot } from '../../../test/support/browser.ts'
import { freePort, importTestImage } from './support/engine.ts'
import { startContainersUi, toTop, type ContainersUi } from './support/browser.ts'

const IMAGE = 'hostd-test/detail:1'
/** Logs three lines, serves HTTP, and stops at once on SIGTERM. */
const COMMAND = `sh -c "trap 'exit 0' TERM; echo alpha line; echo beta line; echo gamma error; httpd -p 80; while :; do sleep 0.2; done"`

describe('container detail and run form', { timeout: 120_000 }, () => {
  let env: ContainersUi
  let port: number

  beforeAll(async () => {
    env = await startContainersUi()
    await importTestImage(env.engine, IMAGE, 'detail page')
    port = await freePort()
    const app = await env.adminApi('POST', '/api/containers', {
      image: IMAGE,
      name: 'app',
      command: COMMAND,
      ports: [`${port}:80`],
      env: { GREETING: 'hello' },
      volumes: ['appdata:/data'],
      restartPolicy: 'no',
    })
    expect(app.status, JSON.stringify(app.json)).toBe(201)
    const scratch = await env.engine.api('POST', '/containers/create?name=scratch', {
      Image: IMAGE,
      Cmd: ['true'],
      Volumes: { '/anon': {} },
      HostConfig: { Binds: ['keep:/k'] },
    })
    expect(scratch.status).toBe(201)
  }, 120_000)
  afterAll(async () => {
    await env?.close()
  })

  it('as admin: searches, stamps and downloads the log, opens a console, edits and recreates, removes with a volume choice', async () => {
    const page = await env.ui.open('admin', '/containers/app')
    await page.setViewportSize({ width: 1440, height: 900 })
    await page.getByRole('heading', { name: 'app', level: 1 }).waitFor()
    // The restart policy and hostd's auto-start, each in words, side by side.
    await page.getByText('Never: the engine leaves it stopped when it exits').waitFor()
    await page.getByText('Off: with this restart policy nothing starts it after a reboot').waitFor()

    const log = page.getByRole('log', { name: 'Log of app' })
    await log.getByText('gamma error').waitFor()
    await page.getByRole('searchbox', { name: 'Search the log of app' }).fill('BETA')
    await page.getByText(/^1 of \d+ lines match$/).waitFor()
    expect((await log.textContent())?.trim()).toBe('beta line')
    await page.getByRole('searchbox', { name: 'Search the log of app' }).fill('')
    await page.getByRole('checkbox', { name: 'Timestamps' }).check()
    await log.getByText(/^\d{4}-\d\d-\d\dT[\d:.]+Z alpha line$/m).waitFor()
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Download' }).click(),
    ])
    expect(download.suggestedFilename()).toBe('app.log')
    const saved = await readFile((await download.path())!, 'utf8')
    expect(saved).toMatch(/^\d{4}-\d\d-\d\dT\S+ alpha line$/m)

    // The console: a shell in the container, through the engine's exec API.
    await page.getByRole('button', { name: 'Open console' }).click()
    const screen = page.getByRole('region', { name: 'Console of app' })
    await page.getByText('Connected', { exact: true }).waitFor()
    await screen.locator('.xterm').click()
    await page.keyboard.type('echo $((6*7)) ok\n')
    await screen
      .locator('.xterm-rows')
      .getByText(/^42 ok\s*$/)
      .waitFor()
    await expectAccessible(page, 'container detail with a console')
    await page.getByRole('button', { name: 'Close console' }).click()
    await page.getByText('The console was closed.').waitFor()
    await toTop(page)
    await screenshot(page, 'containers-detail-console')

    // Edit and recreate keeping the name.
    const before = (await env.engine.api('GET', '/containers/app/json')).json()
    await page.getByRole('button', { name: 'Edit', exact: true }).click()
    const edit = page.getByRole('dialog', { name: 'Edit app' })
    expect(await edit.getByRole('textbox', { name: 'Container port 1' }).inputValue()).toBe('80')
    expect(await edit.getByRole('textbox', { name: 'Host port 1' }).inputValue()).toBe(String(port))
    expect(await edit.getByRole('textbox', { name: 'Volume 1: path inside' }).inputValue()).toBe('/data')
    await edit.getByRole('button', { name: 'Add variable' }).click()
    const rows = await edit.getByRole('textbox', { name: /^Variable \d+: name$/ }).count()
    await edit.getByRole('textbox', { name: `Variable ${rows}: name` }).fill('MODE')
    await edit.getByRole('textbox', { name: `Variable ${rows}: value` }).fill('edited')
    await edit.getByRole('combobox', { name: 'Restart policy' }).selectOption('unless-stopped')
    await screenshot(page, 'containers-edit')
    await edit.getByRole('button', { name: 'Recreate with changes' }).click()
    await edit.waitFor({ state: 'hidden', timeout: 60_000 })
    await page.getByText('Unless stopped by hand: the engine restarts it when it exits').waitFor()
    const after = (await env.engine.api('GET', '/containers/app/json')).json()
    expect(after.Id).not.toBe(before.Id)
    expect(after.Config.Env).toContain('MODE=edited')
    expect(after.HostConfig.RestartPolicy.Name).toBe('unless-stopped')
    expect(after.HostConfig.Binds).toEqual(['appdata:/data'])

    // Removal: red, volumes kept unless ticked.
    await page.goto(`${env.ui.daemon.url}/containers/scratch`)
    await page.getByRole('heading', { name: 'scratch', level: 1 }).waitFor()
    await page.getByRole('button', { name: 'Remove', exact: true }).click()
    const dialog = page.getByRole('dialog', { name: 'Remove scratch?' })
    const anonymous = dialog.getByRole('checkbox', { name: /Also remove its anonymous volumes/ })
    const named = dialog.getByRole('checkbox', { name: 'Remove volume keep' })
    expect(await anonymous.isChecked()).toBe(false)
    expect(await named.isChecked()).toBe(false)
    const confirm = dialog.getByRole('button', { name: 'Remove container' })
    expect(await confirm.getAttribute('class')).toContain('btn-danger')
    await expectAccessible(page, 'removal dialog')
    await screenshot(page, 'containers-remove-dialog')
    const anonName = (
      (await env.engine.api('GET', '/containers/scratch/json')).json().Mounts as {
        Name: string
        Destination: string
      }[]
    ).find((m) => m.Destination === '/anon')!.Name
    await anonymous.check()
    await confirm.click()
    await page.getByRole('heading', { name: 'Containers', level: 1 }).waitFor()
    const volumes = ((await env.engine.api('GET', '/volumes')).json().Volumes as { Name: string }[]).map((v) => v.Name)
    expect(volumes).toContain('keep')
    expect(volumes).not.toContain(anonName)
    env.ui.assertNoCspViolations()
    await page.context().close()
  })

  it('run form rows, placeholders and restart default; a translated error; roles; the detail page on a phone', async () => {
    const page = await env.ui.open('operator', '/containers/run')
    await page.setViewportSize({ width: 1440, height: 900 })
    await page.getByRole('heading', { name: 'Run a container' }).waitFor()
    expect(await page.getByRole('combobox', { name: 'Restart policy' }).inputValue()).toBe('unless-stopped')
    // The search starts from what was typed, and a picked name keeps the typed tag.
    await page.getByRole('textbox', { name: 'Image' }).fill('busybox:1.36')
    await page.getByRole('button', { name: 'Search the registry' }).click()
    const search = page.getByRole('dialog', { name: 'Search the registry' })
    expect(await search.getByRole('textbox', { name: 'Search term' }).inputValue()).toBe('busybox')
    await search.getByRole('button', { name: 'Close' }).click()
    // Until the dialog has closed the page under it is inert: what is typed there would go nowhere.
    await search.waitFor({ state: 'hidden' })
    expect(await page.getByRole('textbox', { name: 'Image' }).inputValue()).toBe('busybox:1.36')

    await page.getByRole('textbox', { name: 'Image' }).fill(IMAGE)
    expect(await page.getByRole('textbox', { name: 'Image' }).inputValue()).toBe(IMAGE)
    await page.getByRole('textbox', { name: 'Name' }).fill('clash')
    await page.getByRole('button', { name: 'Add port' }).click()
    const container = page.getByRole('textbox', { name: 'Container port 1' })
    expect(await container.getAttribute('placeholder')).toBe('Container port')
    await container.fill('http')
    await page.getByText('The container port is a number from 1 to 65535').waitFor()
    expect(await container.getAttribute('aria-invalid')).toBe('true')
    await container.fill('80')
    await page.getByRole('textbox', { name: 'Host port 1' }).fill(String(port))
    await page.getByRole('button', { name: 'Add variable' }).click()
    await page.getByRole('textbox', { name: 'Variable 1: name' }).fill('A')
    await page.getByRole('textbox', { name: 'Variable 1: value' }).fill('1')
    await page.getByRole('button', { name: 'Add volume' }).click()
    await page.getByRole('textbox', { name: 'Volume 1: volume name' }).fill('clashdata')
    await page.getByRole('textbox', { name: 'Volume 1: path inside' }).fill('/data')
    await page.getByRole('textbox', { name: 'Command' }).fill('httpd -f -p 80')
    await page.getByRole('button', { name: 'Run', exact: true }).click()
    // The engine's "port is already allocated", translated, its own words under Details.
    const alert = page
      .getByRole('alert')
      .filter({ hasText: `Port ${port} is used by app` })
      .first()
    await alert.waitFor({ timeout: 60_000 })
    await expectAccessible(page, 'run form with rows and an error')
    await toTop(page)
    await screenshot(page, 'containers-run-rows')
    await page.context().close()

    // Operators edit but get no console; viewers neither.
    const operator = await env.ui.open('operator', '/containers/app')
    await operator.getByRole('heading', { name: 'app', level: 1 }).waitFor()
    await operator.getByRole('button', { name: 'Edit', exact: true }).waitFor()
    expect(await operator.getByRole('button', { name: 'Open console' }).count()).toBe(0)
    await operator.context().close()
    const viewer = await env.ui.open('viewer', '/containers/app')
    await viewer.getByRole('log', { name: 'Log of app' }).waitFor()
    expect(await viewer.getByRole('button', { name: 'Edit', exact: true }).count()).toBe(0)
    expect(await viewer.getByRole('button', { name: 'Open console' }).count()).toBe(0)
    await viewer.context().close()

    // A phone: no sideways scrolling on the detail page, console included.
    const phone = await env.ui.open('admin', '/containers/app')
    await phone.setViewportSize({ width: 390, height: 844 })
    await phone.getByRole('heading', { name: 'app', level: 1 }).waitFor()
    await phone.getByRole('button', { name: 'Open console' }).click()
    await phone.getByText('Connected', { exact: true }).waitFor()
    // Typed and answered, as on the desktop (waiting for the shell's first prompt instead failed in two CI runs under
    // load, never here: its cause is not found, the console works).
    const phoneScreen = phone.getByRole('region', { name: 'Console of app' })
    await phoneScreen.locator('.xterm').click()
    await phone.keyboard.type('echo phone $((6*7))\n')
    await phoneScreen
      .locator('.xterm-rows')
      .getByText(/^phone 42\s*$/)
      .waitFor()
    await eventually(() => phone.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth))
    await toTop(phone)
    await screenshot(phone, 'containers-detail-phone')
    env.ui.assertNoCspViolations()
    await phone.context().close()
  })
})
