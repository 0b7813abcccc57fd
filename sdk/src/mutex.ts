/**
 * Runs async critical sections one at a time, in arrival order, in this process (the daemon is one process over one
 * SQLite file). A task that fails does not stop the ones queued after it.
 * @since 1.1.0
 */
export class Mutex {
  #tail: Promise<unknown> = Promise.resolve()

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(task)
    // The tail never rejects, so the next task runs whatever this one did.
    this.#tail = result.catch(() => undefined)
    return result
  }
}
