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
