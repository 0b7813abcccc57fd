import { Type, type Static } from '@hostd/sdk'

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])

export const JobActionSchema = Type.Union(
  [
    Type.Literal('install'),
    Type.Literal('upgrade'),
    Type.Literal('remove'),
    Type.Literal('purge'),
    Type.Literal('refresh'),
  ],
  {
    description:
      'install, upgrade (no names: every upgradable package), remove, purge (remove with its configuration), refresh (apt-get update)',
  },
)
export type JobAction = Static<typeof JobActionSchema>

/** The package job running now (one at a time). */
export const JobSchema = Type.Object({
  id: Type.String(),
  action: JobActionSchema,
  packages: Type.Array(Type.String()),
  startedAt: Type.String({ format: 'date-time' }),
  username: Nullable(Type.String()),
})
export type Job = Static<typeof JobSchema>

export const InstalledPackageSchema = Type.Object({
  name: Type.String(),
  version: Type.String({ description: 'Installed version' }),
  architecture: Type.String({ description: 'amd64, arm64, all, ...' }),
  summary: Type.String({ description: 'First line of the description' }),
  installedSizeInBytes: Type.Integer({ description: "dpkg's Installed-Size (KiB) in bytes" }),
  state: Type.String({
    description: "dpkg's status: installed, or half-configured, unpacked, ... for a package a failed job left behind",
  }),
  upgradable: Type.Boolean({ description: "apt's candidate version differs from the installed one" }),
  candidateVersion: Nullable(Type.String({ description: 'The version an upgrade installs; null unless upgradable' })),
  essential: Type.Boolean({
    description:
      'Essential: yes, Protected: yes or Priority: required (apt, dpkg, bash...): the system needs it, hostd does not remove it',
  }),
})
export type InstalledPackageItem = Static<typeof InstalledPackageSchema>

export const PackageListSchema = Type.Object({
  items: Type.Array(InstalledPackageSchema, { description: 'Sorted by name, then architecture' }),
  total: Type.Integer(),
  upgradableCount: Type.Integer(),
  upgradesCheckedAt: Nullable(
    Type.String({
      format: 'date-time',
      description: "When apt's candidates were last read; null if apt could not be read",
    }),
  ),
  job: Nullable(JobSchema),
})

export const SearchQuerySchema = Type.Object({
  q: Type.String({
    minLength: 1,
    maxLength: 100,
    description: 'Text (not a regex, not an apt pattern), matched case-insensitively in names and summaries',
  }),
})

export const SearchItemSchema = Type.Object({
  name: Type.String(),
  architecture: Type.String(),
  version: Type.String({ description: "apt's candidate version (the installed one for a package no list offers)" }),
  summary: Type.String(),
  installed: Type.Boolean(),
  installedVersion: Nullable(Type.String()),
  upgradable: Type.Boolean(),
  essential: Type.Boolean({ description: 'Installed and essential (as in the list): hostd does not remove it' }),
})
export type SearchItem = Static<typeof SearchItemSchema>

export const SearchResultSchema = Type.Object({
  query: Type.String(),
  total: Type.Integer({ description: 'Matches before the cap' }),
  truncated: Type.Boolean(),
  items: Type.Array(SearchItemSchema, {
    description:
      'Exact name first, then names starting with the query, names holding it, summaries holding it; by name within each',
  }),
})

/** The first (and only) client message on /api/packages/exec. */
export const ExecRequestSchema = Type.Object(
  {
    action: JobActionSchema,
    packages: Type.Optional(Type.Array(Type.String(), { maxItems: 50 })),
  },
  { additionalProperties: false },
)
export type ExecRequest = Static<typeof ExecRequestSchema>

export const RemovalQuerySchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 128, description: 'An installed package (optionally name:arch)' }),
})

/** What removing a package takes with it: apt's simulation (`apt-get -s remove`), asked before the removal. */
export const RemovalSchema = Type.Object({
  name: Type.String(),
  removes: Type.Array(
    Type.Object({
      name: Type.String(),
      architecture: Type.String(),
      version: Type.String(),
      summary: Type.String(),
    }),
    { description: 'Every package apt would remove, the one asked for first, then by name' },
  ),
})
export type Removal = Static<typeof RemovalSchema>
