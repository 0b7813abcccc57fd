/**
 * Real-browser tests of the web UI: Debian's Chromium (/usr/bin/chromium) driven by playwright-core against a real
 * daemon serving the real bundle (vitest's globalSetup builds ui/dist). A plugin's browser test is a few lines:
 *
 *   const ui = await startUi({ builtinPlugins: true })          // daemon + browser, first admin created
 *   const page = await ui.open('operator', '/containers')        // a fresh operator, signed in, on that page
 *   await page.getByRole('button', { name: 'Run' }).click()      // drive it by role and accessible name
 *   await expectAccessible(page)                                 // axe: no serious or critical violation
 *   await screenshot(page, 'containers')                         // .hostd-test/screenshots/containers-{light,dark}.png
 *   ui.assertNoCspViolations()
 *   await ui.close()
 *
 * Chromium runs in a network namespace of its own (test/support/browser-netns.ts), so the interfaces other tests add
 * and remove cannot make it drop loads (ERR_NETWORK_CHANGED); the daemon's port is forwarded into it, so pages load
 * from the daemon's own URL. `ui.forward(port)` lets a page reach another local port. HOSTD_TEST_BROWSER_NETNS=0
 * runs Chromium in the machine's namespace instead (no root needed, but exposed to those changes again).
 */
import { mkdir, readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { beforeEach, onTestFailed } from 'vitest'
import { startBrowserNetns, type BrowserNetns } from './browser-netns.ts'
import { REPO_ROOT, startDaemon, type Daemon } from './daemon.ts'

export const PASSWORD = 'correct horse battery'
export const SCREENSHOTS = join(REPO_ROOT, '.hostd-test', 'screenshots')
/** What a failed browser test leaves behind: each of its pages' screenshot, text and network log. */
export const FAILURES = join(REPO_ROOT, '.hostd-test', 'failures')
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
]

/** Run Chromium in the machine's network namespace, not one of its own (see the top of this file). */
const SHARED_NETNS = process.env.HOSTD_TEST_BROWSER_NETNS === '0'

/**
 * Chromium, headless, with a fresh profile (playwright gives each launch its own temporary user-data-dir), in `netns`
 * when given (startUi gives it one), else in the machine's network namespace.
 */
export function launchBrowser(netns?: BrowserNetns): Promise<Browser> {
  return chromium.launch({ executablePath: netns?.executablePath ?? '/usr/bin/chromium', args: CHROMIUM_ARGS })
}

export type UiRole = 'viewer' | 'operator' | 'admin'

export interface Account {
  username: string
  password: string
}

export interface UiHarness {
  daemon: Daemon
  browser: Browser
  url: string
  /** The first admin (created by startUi unless `setup: false`). */
  admin: Account
  /** A bearer token of the first admin, for API calls from the test. */
  adminToken: string
  /** Creates a user of that role through the API. */
  createUser(role: UiRole, username?: string): Promise<Account>
  /** A new browser context signed in as a fresh user of `role` (or as `account`), on `path`. */
  open(who: UiRole | Account, path?: string, options?: { colorScheme?: 'light' | 'dark' }): Promise<Page>
  /** A new browser context, signed out. */
  newPage(options?: { colorScheme?: 'light' | 'dark' }): Promise<Page>
  /**
   * Lets the browser's pages reach 127.0.0.1:<port> of this machine, e.g. a container's published web port: the
   * browser has a network namespace of its own, where only the daemon's port is forwarded. Resolves once the port is
   * reachable from the pages; the same URL then works in the page and in the test.
   */
  forward(port: number): Promise<void>
  /** Console messages reporting a Content-Security-Policy violation, in every page opened so far. */
  cspViolations: string[]
  assertNoCspViolations(): void
  close(): Promise<void>
}

export interface StartUiOptions {
  /** Load the plugins shipped in plugins/ (default false: the kernel alone starts faster). */
  builtinPlugins?: boolean
  /** Create the first admin (default true); false leaves the daemon in first-run setup. */
  setup?: boolean
  env?: Record<string, string>
}

let counter = 0

/** A daemon serving the UI and a browser; everything started here is stopped by `close()`. */
export async function startUi(options: StartUiOptions = {}): Promise<UiHarness> {
  const [started, made] = await Promise.allSettled([
    startDaemon({
      env: { HOSTD_BUILTIN_PLUGINS: options.builtinPlugins ? '1' : '0', ...options.env },
      startTimeoutMs: 60_000,
    }),
    SHARED_NETNS ? null : startBrowserNetns(),
  ])
  if (started.status === 'rejected' || made.status === 'rejected') {
    if (started.status === 'fulfilled') await started.value.stop()
    if (made.status === 'fulfilled') await made.value?.close()
    throw started.status === 'rejected' ? started.reason : (made as PromiseRejectedResult).reason
  }
  const daemon = started.value
  const netns = made.value
  liveDaemons.add(daemon)
  let browser: Browser | null = null
  try {
    await netns?.forward(daemon.port)
    browser = await launchBrowser(netns ?? undefined)
    const admin = { username: 'admin', password: PASSWORD }
    const json = { 'content-type': 'application/json' }
    const login = async (a: Account) => {
      const res = await daemon.fetch('/api/auth/login', {
        method: 'POST',
        headers: { ...json, 'x-svc-client': 'test' },
        body: JSON.stringify(a),
      })
      if (res.status !== 200) throw new Error(`sign-in of ${a.username} failed: ${res.status} ${await res.text()}`)
      return ((await res.json()) as { token: string }).token
    }
    let adminToken = ''
    if (options.setup !== false) {
      const res = await daemon.fetch('/api/setup', { method: 'POST', headers: json, body: JSON.stringify(admin) })
      if (res.status !== 201) throw new Error(`setup failed: ${res.status} ${await res.text()}`)
      adminToken = await login(admin)
    }
    const contexts: BrowserContext[] = []
    const cspViolations: string[] = []
    const newContext = async (colorScheme: 'light' | 'dark' = 'light') => {
      // Reduced motion (base.css then turns transitions off): a theme switch for a screenshot is instant, so axe never
      // measures the contrast of a colour halfway through its transition.
      const context = await browser!.newContext({
        ignoreHTTPSErrors: true,
        colorScheme,
        reducedMotion: 'reduce',
        viewport: { width: 1280, height: 860 },
      })
      contexts.push(context)
      const log: string[] = []
      const started = Date.now()
      const at = () => `+${((Date.now() - started) / 1000).toFixed(1)}s`
      context.on('console', (message) => {
        if (/Content.Security.Policy/i.test(message.text())) cspViolations.push(message.text())
        if (message.type() === 'error') log.push(`${at()} console: ${message.text()} ${message.location().url}`)
      })
      context.on('requestfailed', (request) =>
        log.push(`${at()} failed: ${request.method()} ${request.url()} ${request.failure()?.errorText ?? ''}`),
      )
      context.on('requestfinished', (request) => {
        const took = request.timing().responseEnd
        if (took > 2_000) log.push(`${at()} slow: ${request.method()} ${request.url()} ${Math.round(took)} ms`)
      })
      context.on('page', (page) => {
        openPages.set(page, log)
        page.on('close', () => openPages.delete(page))
      })
      return context
    }
    const harness: UiHarness = {
      daemon,
      browser,
      url: daemon.url,
      admin,
      get adminToken() {
        return adminToken
      },
      async createUser(role, username = `${role}${++counter}`) {
        adminToken ||= await login(admin) // after a setup the test did through the page
        const headers = { ...json, authorization: `Bearer ${adminToken}` }
        const create = () =>
          daemon.fetch('/api/users', {
            method: 'POST',
            headers,
            body: JSON.stringify({ username, password: PASSWORD, role }),
          })
        let res = await create()
        if (
          res.status === 403 &&
          ((await res.clone().json()) as { error?: string }).error === 'HOSTD_AUTH_REAUTH_REQUIRED'
        ) {
          // The admin signed in longer ago than the re-authentication window (a long test file): give the password
          // again, as a person would in the dialog, and send the same request once more.
          const again = await daemon.fetch('/api/auth/reauth', {
            method: 'POST',
            headers,
            body: JSON.stringify({ password: admin.password }),
          })
          if (again.status !== 204)
            throw new Error(`re-authenticating the admin failed: ${again.status} ${await again.text()}`)
          res = await create()
        }
        if (res.status !== 201) throw new Error(`creating ${username} failed: ${res.status} ${await res.text()}`)
        return { username, password: PASSWORD }
      },
      async open(who, path = '/', { colorScheme } = {}) {
        const account = typeof who === 'string' ? (who === 'admin' ? admin : await harness.createUser(who)) : who
        const token = await login(account)
        const context = await newContext(colorScheme)
        await addSessionCookie(context, daemon.url, token)
        const page = await context.newPage()
        await gotoRetrying(page, new URL(path, daemon.url).href)
        return page
      },
      async newPage({ colorScheme } = {}) {
        return (await newContext(colorScheme)).newPage()
      },
      async forward(port) {
        await netns?.forward(port)
      },
      cspViolations,
      assertNoCspViolations() {
        if (cspViolations.length) throw new Error(`Content-Security-Policy violations:\n${cspViolations.join('\n')}`)
      },
      async close() {
        for (const context of contexts) await context.close().catch(() => undefined)
        try {
          await browser?.close()
        } finally {
          await netns?.close()
          liveDaemons.delete(daemon)
          await daemon.stop()
        }
      },
    }
    return harness
  } catch (err) {
    await browser?.close().catch(() => undefined)
    await netns?.close()
    liveDaemons.delete(daemon)
    await daemon.stop()
    throw err
  }
}

/**
 * page.goto, tried again when Chromium reports ERR_NETWORK_CHANGED (or shows its error page for it). Chromium drops
 * navigations in flight, even on loopback, when the interfaces of its network namespace change; the browser of
 * startUi has a namespace of its own, so this should never retry there. When it does, it says so on stderr.
 */
/** Signs `context` in with a session token, as the sign-in form's cookie would (`svc_session`, host-only, strict). */
export async function addSessionCookie(context: BrowserContext, url: string, token: string): Promise<void> {
  await context.addCookies([
    {
      name: 'svc_session',
      value: token,
      domain: new URL(url).hostname,
      path: '/',
      httpOnly: true,
      secure: true,
      sameSite: 'Strict',
    },
  ])
}

export async function gotoRetrying(page: Page, url: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await page.goto(url)
      return
    } catch (err) {
      // Chromium also reloads a page whose load the network change broke, which playwright reports as this navigation
      // "interrupted by another navigation".
      if (
        attempt >= 3 ||
        !/ERR_NETWORK_CHANGED|chrome-error:\/\/chromewebdata|interrupted by another navigation/.test(String(err))
      )
        throw err
      process.stderr.write(
        `${new Date().toISOString()} gotoRetrying: navigating to ${url} again (attempt ${attempt + 1}): ${String(err).split('\n')[0]}\n`,
      )
    }
  }
}

/** Signs in through the sign-in form (the page must show it). */
export async function signInThroughForm(page: Page, account: Account): Promise<void> {
  await page.getByRole('heading', { name: 'Sign in' }).waitFor()
  await page.getByRole('textbox', { name: 'User name' }).fill(account.username)
  await page.getByLabel('Password', { exact: true }).fill(account.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
}

/** Saves the page in the light and in the dark theme: `.hostd-test/screenshots/<name>-light.png` and `-dark.png`. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(SCREENSHOTS, { recursive: true })
  // With a modal open, the viewport: a full-page capture of a scrolled page draws the fixed shell, the backdrop and
  // the dialog at the scrolled offset, over a page that looks broken.
  const fullPage = (await page.locator('dialog[open]').count()) === 0
  // The same goes for the fixed shell alone: a whole-page capture is taken from the top, then the scroll is put back.
  const scrolledTo = fullPage ? await page.evaluate(() => scrollY) : 0
  if (scrolledTo) await page.evaluate(() => scrollTo({ top: 0, behavior: 'instant' }))
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme })
    await page.waitForTimeout(150) // charts redraw on the theme change
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-${colorScheme}.png`), fullPage })
  }
  await page.emulateMedia({ colorScheme: null })
  if (scrolledTo) await page.evaluate((top) => scrollTo({ top, behavior: 'instant' }), scrolledTo)
}

let axeSource: string | null = null

export interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: { target: string[] }[]
}

/**
 * Runs axe-core on the page and throws when it finds a serious or critical violation. axe is evaluated through
 * the DevTools protocol, which the page's CSP does not govern, so the CSP under test stays exactly as served.
 */
export async function expectAccessible(page: Page, what = page.url()): Promise<void> {
  axeSource ??= await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')
  const installed = await page.evaluate(() => 'axe' in window)
  if (!installed) await page.evaluate(axeSource)
  const violations = await page.evaluate(async () => {
    const axe = (
      window as unknown as { axe: { run(ctx: Document, opts: object): Promise<{ violations: AxeViolation[] }> } }
    ).axe
    const result = await axe.run(document, { resultTypes: ['violations'] })
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target })),
    }))
  })
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
  if (bad.length) {
    const where = (v: AxeViolation) => v.nodes.map((n) => n.target.join(' ')).join(', ')
    throw new Error(
      `accessibility violations on ${what}:\n${bad.map((v) => `${v.impact} ${v.id}: ${v.help} at ${where(v)}`).join('\n')}`,
    )
  }
}

/**
 * Signs the page's user out from another tab of the same browser, as a person would. Meanwhile the page's navigation
 * refresh (GET /api/extensions, every 4 s) is held: it would notice the ended session and show the sign-in page
 * before the page's own message (a terminal's or a desktop's "Your session ended") can be read. Call the returned
 * function to let the refresh through again.
 */
export async function signOutInAnotherTab(page: Page): Promise<() => Promise<void>> {
  const held: (() => Promise<void>)[] = []
  await page.route('**/api/extensions', (route) => void held.push(() => route.continue()))
  const other = await page.context().newPage()
  await other.goto(new URL('/', page.url()).href)
  await other.getByRole('button', { name: /account menu/ }).click()
  await other.getByRole('button', { name: 'Sign out' }).click()
  await other.getByRole('heading', { name: 'Sign in' }).waitFor()
  return async () => {
    for (const release of held.splice(0)) await release()
    await page.unroute('**/api/extensions')
  }
}

let failureCount = 0

/** The daemons of the harnesses still open (their logs go into a failed test's report). */
const liveDaemons = new Set<Daemon>()

/** Every page still open, with its context's log of failed or slow requests and console errors. */
const openPages = new Map<Page, string[]>()

/**
 * When a test fails, saves what each open page showed (those it opened and those a hook opened for the whole file):
 * a screenshot, the page's text, and the requests that failed or took over 2 s (`.hostd-test/failures/`, and the
 * same lines on stderr). Registered for every test of a file that imports this module; only inside vitest, since
 * the UI bench (test/bench/ui.ts) imports it too.
 */
if (process.env.VITEST)
  beforeEach(() => {
    onTestFailed(async ({ task }) => {
      for (const daemon of liveDaemons) {
        // The daemon's own word on what failed: its warnings and errors (pino lines of level 40 and up) and its stderr.
        const warnings = daemon
          .stdout()
          .split('\n')
          .filter((line) => /"level":(?:[4-6]\d)/.test(line))
          .slice(-20)
        const stderr = daemon.stderr().trim().split('\n').slice(-20)
        process.stderr.write(
          `\n--- ${new Date().toISOString()} the daemon of the failed test "${task.name}" (pid ${daemon.pid}), ` +
            `its last warnings and errors:\n${[...warnings, ...stderr].filter(Boolean).join('\n') || '(none)'}\n---\n`,
        )
      }
      for (const [page, log] of openPages) {
        if (page.isClosed()) continue
        const name = `${++failureCount}-${task.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60)}`
        await mkdir(FAILURES, { recursive: true })
        await page.screenshot({ path: join(FAILURES, `${name}.png`), timeout: 5_000 }).catch(() => undefined)
        const text = await page
          .locator('body')
          .innerText({ timeout: 5_000 })
          .catch((err: Error) => `(no text: ${err.message})`)
        process.stderr.write(
          `\n--- ${new Date().toISOString()} page of the failed test "${task.name}": ${page.url()} ` +
            `(screenshot: .hostd-test/failures/${name}.png)\n${text.slice(0, 1_500)}\n` +
            `--- its network and console:\n${log.join('\n') || '(nothing failed or slow)'}\n---\n`,
        )
      }
    })
  })
