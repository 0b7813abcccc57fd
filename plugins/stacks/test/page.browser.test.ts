/**
 * The stacks page in Debian's Chromium against the real daemon (containers and stacks plugins), a private dockerd
 * and a local docker-registry. A viewer sees the empty state, then the stack read-only (no deploy, no .env values);
 * an operator deploys it from the page with live progress, sees every service running, reads the merged logs, and
 * gets a problem with its line while typing a key hostd does not support; a project made by docker-compose 1.29 is
 * listed as adoptable, without the button for an operator, and an admin adopts it. Screenshots light and dark.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectAccessible, screenshot, startUi, type UiHarness } from '../../../test/support/browser.ts'
import {
  freePort,
  importTestImage,
  pushToRegistry,
  startEngine,
  startRegistry,
  type TestEngine,
  type TestRegistry,
} from '../../containers/test/support/engine.ts'
import { threeServices } from './support.ts'

const run = promisify(execFile)

describe('stacks page', { timeout: 300_000 }, () => {
  let engine: TestEngine
  let registry: TestRegistry
  let ui: UiHarness
  let image: string
  const api = (path: string, body?: unknown) =>
    ui.daemon.fetch(path, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${ui.adminToken}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })

  beforeAll(async () => {
    engine = await startEngine()
    registry = await startRegistry(engine.dir)
    await importTestImage(engine, 'hostd-test/stacks-page:1', 'stack page')
    image = `${registry.address}/hostd-test/stacks-page:1`
    await pushToRegistry(engine, 'hostd-test/stacks-page:1', image)
    await engine.docker('rmi', image, 'hostd-test/stacks-page:1')
    ui = await startUi({
      builtinPlugins: true,
      env: { DOCKER_HOST: engine.host, HOSTD_BUILTIN_PLUGINS: 'containers,stacks' },
    })
  }, 240_000)

  afterAll(async () => {
    await ui?.close()
    await registry?.stop()
    await engine?.stop()
  })

  it('shows a viewer the empty list, then a stack read-only', async () => {
    const page = await ui.open('viewer', '/stacks')
    await page.getByRole('heading', { name: 'Stacks', level: 1 }).waitFor()
    await page.getByText('No stacks yet').waitFor()
    expect(await page.getByRole('button', { name: 'New stack' }).count()).toBe(0)
    await screenshot(page, 'stacks-empty')

    const port = await freePort()
    const created = await api('/api/stacks', {
      name: 'shop',
      compose: threeServices,
      env: `IMAGE=${image}\nWEB_PORT=${port}\nGREETING=hello\n`,
    })
    expect(created.status).toBe(201)
    // The list follows the events socket: the new folder shows without a reload.
    await page.getByRole('link', { name: 'shop' }).click()
    await page.getByRole('heading', { name: 'Stack shop', level: 1 }).waitFor()
    const compose = page.getByRole('textbox', { name: 'Compose file (compose.yaml)' })
    expect(await compose.getAttribute('readonly')).not.toBeNull()
    await page.getByText('Its .env sets IMAGE, WEB_PORT, GREETING').waitFor()
    expect(await page.getByRole('button', { name: 'Deploy' }).count()).toBe(0)
    await page.getByRole('table', { name: 'Services' }).getByRole('cell', { name: 'db' }).waitFor()
    await expectAccessible(page, 'stack as viewer')
    await screenshot(page, 'stacks-viewer')
    ui.assertNoCspViolations()
  })

  it('lets an operator deploy with progress, read the logs, and see problems while typing', async () => {
    const page = await ui.open('operator', '/stacks/shop')
    await page.getByRole('heading', { name: 'Stack shop', level: 1 }).waitFor()
    await page.getByRole('button', { name: 'Deploy' }).click()
    const progress = page.getByRole('list', { name: 'Deploy progress' })
    await progress.waitFor()
    await page.getByText('Deploy: done').waitFor({ timeout: 120_000 })
    await expect.poll(() => progress.getByRole('listitem').count()).toBeGreaterThanOrEqual(3)
    await screenshot(page, 'stacks-deployed')
    const services = page.getByRole('table', { name: 'Services' })
    await expect.poll(() => services.getByText('running').count()).toBe(3)
    await services.getByText('healthy').waitFor()

    await page.getByRole('tab', { name: 'Logs' }).click()
    await page.getByText(/worker\s+\| worker for /).waitFor()
    await screenshot(page, 'stacks-logs')

    await page.getByRole('tab', { name: 'Files' }).click()
    const compose = page.getByRole('textbox', { name: 'Compose file (compose.yaml)' })
    await compose.fill(threeServices.replace('\n  db:\n', '\n  db:\n    build: .\n'))
    const problems = page.getByRole('list', { name: 'Problems' })
    await problems.getByText('services.db.build is not supported').waitFor()
    await problems.getByRole('button', { name: 'Line 15' }).waitFor()
    await expectAccessible(page, 'stack editor with a problem')
    await screenshot(page, 'stacks-editor-problem')
    // Saving refuses the file and says why; nothing is written.
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByText('Not saved').waitFor()
    const detail = (await (await api('/api/stacks/shop')).json()) as { compose: string }
    expect(detail.compose).toBe(threeServices)

    // A new stack: checked as it is typed, created, then shown.
    await page.goto(new URL('/stacks/new', ui.url).href)
    await page.getByRole('heading', { name: 'New stack', level: 1 }).waitFor()
    await page.getByRole('textbox', { name: 'Stack name' }).fill('blog')
    await page
      .getByRole('textbox', { name: 'Compose file (compose.yaml)' })
      .fill(`services:\n  app:\n    image: ${image}\n    command: sleep 3600\n`)
    await page.getByText('The file is valid.').waitFor()
    await screenshot(page, 'stacks-new')
    await page.getByRole('button', { name: 'Create stack' }).click()
    await page.getByRole('heading', { name: 'Stack blog', level: 1 }).waitFor()
    ui.assertNoCspViolations()
  })

  it('shows a compose CLI project as adoptable, and an admin adopts it from the list', async () => {
    const work = await mkdtemp(join(tmpdir(), 'hostd-legacy-page-'))
    await writeFile(
      join(work, 'docker-compose.yml'),
      `version: "3.7"\nservices:\n  app:\n    image: ${image}\n    command: sleep 3600\n`,
    )
    const env = { ...process.env, DOCKER_HOST: engine.host }
    await run('docker-compose', ['-p', 'legacy', 'up', '-d'], { cwd: work, env })
    const operatorPage = await ui.open('operator', '/stacks')
    await operatorPage
      .getByRole('table', { name: 'Adoptable projects' })
      .getByRole('cell', { name: 'legacy', exact: true })
      .waitFor()
    expect(await operatorPage.getByRole('button', { name: 'Adopt legacy' }).count()).toBe(0)

    const page = await ui.open('admin', '/stacks')
    await page.getByRole('button', { name: 'Adopt legacy' }).waitFor()
    await expectAccessible(page, 'stacks list with an adoptable project')
    await screenshot(page, 'stacks-adoptable')
    await page.getByRole('button', { name: 'Adopt legacy' }).click()
    await page.getByRole('link', { name: 'legacy' }).waitFor()
    expect(await page.getByRole('table', { name: 'Adoptable projects' }).count()).toBe(0)
    await screenshot(page, 'stacks-adopted')
    await run('docker-compose', ['-p', 'legacy', 'down', '-t', '0'], { cwd: work, env })
    await rm(work, { recursive: true, force: true })
    ui.assertNoCspViolations()
  })
})
