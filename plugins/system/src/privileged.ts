import { errors, type AuditService, type HelperClient } from '@hostd/sdk'
import { SystemErrors } from './errors.ts'
import { readHostname, readNtp, readSsh, readTimeZone, SSHD } from './host/settings.ts'
import { listTimeZones } from './host/timezones.ts'
import { translateSystemError } from './translate.ts'

type Choice = 'on' | 'off' | 'set'
interface PrivilegedAction {
  title: string
  choices: Choice[]
  /** For `set`: what a value must look like (the helper checks again). */
  value?: { pattern: RegExp; hint: string }
  /** The current state: 'on' / 'off', or the current value; null when the host does not tell. */
  read(): Promise<string | null>
  /** Why the action cannot be offered now (the program is missing), and what to do; null when it can. */
  unavailable?(): Promise<string | null>
  /** The helper action and arguments for a choice. */
  helper(choice: Choice, value: string | undefined): [string, Record<string, unknown>]
}

const onOff = (on: boolean | null) => (on === null ? null : on ? 'on' : 'off')

/**
 * The allowlisted privileged actions: adding one is one entry here plus its helper action in helper/. `sshd` is the
 * SSH daemon's path (its absence: SSH not installed).
 */
export const privilegedActions = (sshd: string): Record<string, PrivilegedAction> => ({
  ssh: {
    title: 'SSH server',
    choices: ['on', 'off'],
    read: async () => {
      const ssh = await readSsh(undefined, sshd)
      return ssh.installed ? onOff(ssh.running) : 'not-installed'
    },
    unavailable: async () =>
      (await readSsh(undefined, sshd)).installed
        ? null
        : 'The SSH server (openssh-server) is not installed on this host. Install it from the Packages page, then turn it on here.',
    helper: (choice) => ['ssh.set', { on: choice === 'on' }],
  },
  hostname: {
    title: 'Host name',
    choices: ['set'],
    value: {
      pattern: /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/,
      hint: 'a host name: letters, digits, hyphens and dots',
    },
    read: readHostname,
    helper: (_, value) => ['hostname.set', { name: value }],
  },
  timezone: {
    title: 'Time zone',
    choices: ['set'],
    value: { pattern: /^[A-Za-z0-9_+-]+(\/[A-Za-z0-9_+-]+){0,2}$/, hint: 'a time zone such as Europe/Paris or UTC' },
    read: readTimeZone,
    helper: (_, value) => ['timezone.set', { zone: value }],
  },
  ntp: {
    title: 'Network time (NTP)',
    choices: ['on', 'off'],
    read: async () => onOff((await readNtp()).active),
    helper: (choice) => ['ntp.set', { on: choice === 'on' }],
  },
})

interface HelperRun {
  stdout?: string
  dryRun?: boolean
  argv?: string[]
}

export class PrivilegedActions {
  readonly #helper: HelperClient
  readonly #audit: AuditService
  readonly #actions: Record<string, PrivilegedAction>

  constructor(helper: HelperClient, audit: AuditService, sshd = SSHD) {
    this.#helper = helper
    this.#audit = audit
    this.#actions = privilegedActions(sshd)
  }

  async list() {
    // A ping through call, not the cached availability alone: this answer is what "Check again" shows, so it says
    // whether the helper answers now (a helper stopped a moment ago is missing, one started a moment ago is there).
    const ping = await this.#helper.call<{ dryRun?: boolean }>('ping').catch(() => null)
    const available = ping !== null
    const dryRun = ping?.dryRun ?? null
    const actions = await Promise.all(
      Object.entries(this.#actions).map(async ([key, a]) => {
        const note = (await a.unavailable?.().catch(() => null)) ?? null
        return { key, title: a.title, choices: note ? [] : a.choices, state: await a.read().catch(() => null), note }
      }),
    )
    return { helper: { available, dryRun }, actions }
  }

  async apply(key: string, choice: Choice, value: string | undefined, actor: Parameters<AuditService['record']>[1]) {
    const action = Object.hasOwn(this.#actions, key) ? this.#actions[key]! : null
    if (!action)
      throw SystemErrors.unknownPrivilegedAction(`No privileged action "${key}"; see GET /api/system/privileged`)
    if (!action.choices.includes(choice))
      throw errors.badRequest(`${key} takes ${action.choices.join(' or ')}, not ${choice}`)
    if (choice === 'set') {
      if (value === undefined || !action.value!.pattern.test(value))
        throw errors.badRequest(`${key}: value must be ${action.value!.hint}`)
      if (key === 'timezone' && !(await listTimeZones()).includes(value))
        throw errors.badRequest(
          `timezone: value must be a time zone this system knows, such as Europe/Paris or UTC; "${value}" is not one`,
        )
    } else if (value !== undefined) throw errors.badRequest(`${key} ${choice} takes no value`)
    const note = await action.unavailable?.().catch(() => null)
    if (note) throw SystemErrors.notInstalled(note)
    const before = await action.read().catch(() => null)
    const [helperAction, args] = action.helper(choice, value)
    let run: HelperRun
    try {
      run = await this.#helper.call<HelperRun>(helperAction, args)
    } catch (raw) {
      const err = (await translateSystemError(raw, action.title)) ?? raw
      await this.#audit.record(
        {
          action: `privileged.${key}`,
          target: key,
          result: 'failure',
          detail: { choice, value: value ?? null, before, error: (err as Error).message },
        },
        actor,
      )
      throw err
    }
    const after = await action.read().catch(() => null)
    const dryRun = run.dryRun === true
    await this.#audit.record(
      {
        action: `privileged.${key}`,
        target: key,
        detail: { choice, value: value ?? null, before, after, dryRun, ...(dryRun ? { argv: run.argv } : {}) },
      },
      actor,
    )
    return { key, before, after, dryRun, ...(dryRun ? { argv: run.argv } : {}) }
  }
}
