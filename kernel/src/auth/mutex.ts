/** Serializes async critical sections in this process (the daemon is one process over one SQLite file). */
export class Mutex {
  #tail: Promise<unknown> = Promise.resolve()

  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(fn, fn)
    this.#tail = result.catch(() => undefined)
    return result
  }
}
