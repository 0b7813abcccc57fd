import { readdir } from 'node:fs/promises'
import type { AuditService, HelperClient } from '@hostd/sdk'
import { SystemErrors } from './errors.ts'
import { readText } from './host/read.ts'

export interface PowerOptions {
  /** Where the kernel lists its sleep states (stand-in file in tests). */
  powerStatePath: string
  /** Where X servers put their sockets; display-sleep uses the first display found there. */
  x11SocketDir: string
}

export type PowerAction = 'sleep' | 'display-sleep' | 'restart' | 'shutdown'

/** Power actions through the helper (systemctl/xset); refused up front with 409 where the host cannot do them. */
export class Power {
  readonly #helper: HelperClient
  readonly #audit: AuditService
  readonly #options: PowerOptions

  constructor(helper: HelperClient, audit: AuditService, options: PowerOptions) {
    this.#helper = helper
    this.#audit = audit
    this.#options = options
  }

  async #helperCall(action: PowerAction): Promise<[string, Record<string, unknown>]> {
    switch (action) {
      case 'sleep': {
        const states = ((await readText(this.#options.powerStatePath)) ?? '').split(/\s+/)
        if (!states.includes('mem') && !states.includes('freeze')) throw SystemErrors.sleepUnsupported()
        return ['power.sleep', {}]
      }
      case 'display-sleep': {
        const sockets = (await readdir(this.#options.x11SocketDir).catch(() => [] as string[]))
          .filter((n) => /^X\d{1,3}$/.test(n))
          .sort()
        if (!sockets[0]) throw SystemErrors.noDisplay()
        return ['power.displaySleep', { display: `:${sockets[0].slice(1)}` }]
      }
      case 'restart':
        return ['power.restart', {}]
      case 'shutdown':
        return ['power.shutdown', {}]
    }
  }

  async run(action: PowerAction, actor: Parameters<AuditService['record']>[1]) {
    const [helperAction, args] = await this.#helperCall(action)
    // Written before the call: a restart or shutdown may not leave time afterwards.
    await this.#audit.record(
      { action: `power.${action}`, target: 'host', detail: { requested: helperAction, args } },
      actor,
    )
    let run: { dryRun?: boolean; argv?: string[] }
    try {
      run = await this.#helper.call(helperAction, args)
    } catch (err) {
      await this.#audit.record(
        { action: `power.${action}`, target: 'host', result: 'failure', detail: { error: (err as Error).message } },
        actor,
      )
      throw err
    }
    return { action, dryRun: run.dryRun === true, ...(run.dryRun ? { argv: run.argv } : {}) }
  }
}
