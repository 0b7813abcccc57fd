/** Runs tasks one at a time, in arrival order: every change to skills, drafts and blobs goes through one. */
export class Mutex {
  #tail: Promise<unknown> = Promise.resolve()

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(task)
    this.#tail = result.catch(() => undefined)
    return result
  }
}
