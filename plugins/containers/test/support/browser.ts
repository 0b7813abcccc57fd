/**
 * The containers pages' browser tests: a real dockerd and a local registry (support/engine.ts) behind a real daemon
 * serving the real bundle to Debian's Chromium (test/support/browser.ts), and a way to hold one socket message.
 */
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { startUi, type UiHarness } from '../../../../test/support/browser.ts'
import { engineDir, startEngine, startRegistry, type TestEngine, type TestRegistry } from './engine.ts'

export interface ContainersUi {
  /** The engine (throws while `engineLater` and not started yet). */
  engine: TestEngine
  /** Starts the engine at the socket the daemon was given (after `engineLater`). */
  startEngine(): Promise<TestEngine>
  registry: TestRegistry
  ui: UiHarness
  /** An API call as the first admin (setup for a test, independent of the page under test). */
  adminApi(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }>
  close(): Promise<void>
}

/**
 * A private engine, a local registry, and a daemon with every built-in plugin whose DOCKER_HOST is that engine's
 * socket. `engineLater`: the daemon starts first and finds no engine until `startEngine()`; `env`: more settings.
 */
export async function startContainersUi({
  engineLater = false,
  env = {},
}: {
  engineLater?: boolean
  env?: Record<string, string>
} = {}): Promise<ContainersUi> {
  const dir = await engineDir()
  let engine = engineLater ? null : await startEngine(dir)
  const registry = await startRegistry(dir)
  // Every list asks the registry again in the background, so an update shows without waiting an hour.
  const ui = await startUi({
    builtinPlugins: true,
    env: { DOCKER_HOST: `unix://${join(dir, 'docker.sock')}`, HOSTD_CONTAINERS_UPDATE_CHECK_SECONDS: '0', ...env },
  })
  return {
    get engine() {
      if (!engine) throw new Error('the engine was not started')
      return engine
    },
    startEngine: async () => (engine = await startEngine(dir)),
    registry,
    ui,
    async adminApi(method, path, body) {
      const res = await ui.daemon.fetch(path, {
        method,
        headers: {
          authorization: `Bearer ${ui.adminToken}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      const text = await res.text()
      return { status: res.status, json: text ? JSON.parse(text) : undefined }
    },
    async close() {
      await ui.close()
      await registry.stop()
      if (engine) await engine.stop()
      else await rm(dir, { recursive: true, force: true })
    },
  }
}

/**
 * Holds the first server message of a page's socket (at `url`) that `matches`, and everything after it, until
 * `release()`: the page shows the state just before that message for as long as a screenshot takes. The socket
 * itself is the real one to the daemon; only the delivery to the page waits.
 */
export async function holdSocketMessage(
  page: Page,
  url: RegExp,
  matches: (message: string) => boolean,
): Promise<{ reached: Promise<void>; release(): void }> {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  let reach!: () => void
  const reached = new Promise<void>((resolve) => (reach = resolve))
  let holding = false
  await page.routeWebSocket(url, (ws) => {
    const server = ws.connectToServer()
    let queue = Promise.resolve()
    server.onMessage((message) => {
      const text = message.toString()
      if (!holding && matches(text)) {
        holding = true
        reach()
      }
      const hold = holding
      queue = queue.then(async () => {
        if (hold) await released
        ws.send(text)
      })
    })
    server.onClose((code, reason) => {
      queue = queue.then(() => ws.close({ code, reason }))
    })
  })
  return { reached, release }
}

/** Scrolls to the top first, so a full-page screenshot does not show the sticky header mid-page. */
export async function toTop(page: Page): Promise<void> {
  await page.evaluate(() => window.scrollTo(0, 0))
}
