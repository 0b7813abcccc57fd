import { connection, lost, RECONNECTED } from './connection.ts'

/**
 * A module import tried up to three times. Chromium drops loads in flight when the machine's network interfaces change
 * (ERR_NETWORK_CHANGED), which starting a container or creating a network does when the browser runs on the host it
 * manages; a failed fetch is not remembered, so the next import() fetches the module anew. Any other error (the
 * module threw while it ran) is the same on every attempt and is thrown at once.
 */
export async function importRetrying<T>(load: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await load()
    } catch (err) {
      if (attempt >= attempts || !(err instanceof TypeError) || !/fetch|import/i.test(err.message)) throw err
      await new Promise((resolve) => setTimeout(resolve, 300 * attempt))
    }
  }
}

const isFetchFailure = (err: unknown) => err instanceof TypeError && /fetch|import/i.test(err.message)
const RELOADED_AT = 'hostd:chunk-reloaded-at'

/**
 * A page's code, loaded so that neither a lost daemon nor an upgrade shows an error: when its fetch fails and the
 * daemon does not answer, it waits until the shell has reconnected (shell/connection.ts) and loads again; when the
 * daemon answers but the file is gone (an upgrade renamed the chunks), the page is reloaded once, which brings the
 * new version's files (not again within a minute, so a chunk missing for another reason shows its error).
 */
export async function importPage<T>(load: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await importRetrying(load)
    } catch (err) {
      if (!isFetchFailure(err)) throw err
      const up = await fetch('/health', { cache: 'no-store' }).then(
        (r) => r.ok,
        () => false,
      )
      if (up) {
        const last = Number(sessionStorage.getItem(RELOADED_AT) ?? 0)
        if (Date.now() - last < 60_000) throw err
        sessionStorage.setItem(RELOADED_AT, String(Date.now()))
        location.reload()
        return new Promise<T>(() => undefined) // the page goes away
      }
      lost()
      if (connection.value.state === 'offline')
        await new Promise((resolve) => addEventListener(RECONNECTED, resolve, { once: true }))
    }
  }
}
