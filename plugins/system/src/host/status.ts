import { readFile } from 'node:fs/promises'
import { createServiceToken, type OptionalServices } from '@hostd/sdk'
import type { ProvidedServices as PackageServices } from '../../../packages/src/api.ts'
import type { HostStatus } from '../schemas.ts'

/** The packages plugin's updates service (optional: without that plugin, updates waiting are unknown). */
export const packageUpdates = createServiceToken<PackageServices['packages.updates']>('packages.updates')

/**
 * What needs the admin's attention: packages apt would upgrade (the packages plugin, when loaded) and a reboot the
 * last upgrade asked for (`/run/reboot-required`, written by Debian's and Ubuntu's update-notifier hooks, with the
 * packages that asked for it in `.pkgs`).
 */
export async function readHostStatus(optional: OptionalServices, rebootFile: string): Promise<HostStatus> {
  const [reboot, updates] = await Promise.all([
    readReboot(rebootFile),
    (async () => {
      const packages = optional.get(packageUpdates)
      if (!packages) return null
      try {
        return await packages.upgradable()
      } catch {
        return null
      }
    })(),
  ])
  return {
    rebootRequired: reboot !== null,
    rebootPackages: reboot ?? [],
    updatesWaiting: updates ? updates.count : null,
    updatesCheckedAt: updates?.checkedAt ?? null,
  }
}

async function readReboot(file: string): Promise<string[] | null> {
  try {
    await readFile(file)
  } catch {
    return null
  }
  const list = await readFile(`${file}.pkgs`, 'utf8').catch(() => '')
  return [
    ...new Set(
      list
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean),
    ),
  ]
}
