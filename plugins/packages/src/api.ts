/**
 * The packages plugin's contract with other plugins (types only; a consumer makes its own token with the id named in
 * `ProvidedServices`, see plugins/alerts/src/service.ts).
 */

/** The services this plugin provides, by token id. */
export interface ProvidedServices {
  /** Optional for others, read-only (the alerts plugin's "updates waiting" rule). */
  'packages.updates': PackageUpdatesService
}

export interface PackageUpdatesService {
  /**
   * The installed packages apt would upgrade, as the package list says (`upgradable`): their count and names, and when
   * apt's candidates were last read (null: never). The first call reads apt's candidates (about a second); later ones
   * answer what was read, and read again in the background when apt's lists or dpkg's database changed.
   */
  upgradable(): Promise<{ count: number; names: string[]; checkedAt: string | null }>
}
