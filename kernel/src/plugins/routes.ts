import { type Static, Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { roleSatisfies } from '@hostd/sdk'
import type { KernelRouteRegistrar } from '../http/registrar.ts'
import type { KernelServices } from '../services.ts'
import type { LoadOutcome, PluginRegistry } from './registry.ts'
import { InstallErrors, deletePluginFolder, unpackPlugin } from './install.ts'
import { KernelErrors } from '../http/errors.ts'
import { checkDataFolder, dataFolderOf, deleteDataFolder } from './plugin-data.ts'

const Role = Type.Union([Type.Literal('viewer'), Type.Literal('operator'), Type.Literal('admin')])
const UiPageSchema = Type.Object({
  path: Type.String(),
  title: Type.String(),
  icon: Type.Optional(Type.String()),
  role: Role,
  module: Type.String({
    description:
      'Versioned URL of the ES module: /plugins/<id>/<version>/<file>; in development mode (HOSTD_DEV=1) a third-party ' +
      "plugin's URLs end in ?rev=<revision of its files>, so an open page loads a changed module again",
  }),
  element: Type.String(),
  badge: Type.Optional(
    Type.String({ description: "A route of the plugin whose `{ count, label }` the shell's header shows" }),
  ),
})
const UiCardSchema = Type.Object({
  title: Type.String(),
  module: Type.String(),
  element: Type.String(),
  role: Role,
  size: Type.Union([Type.Literal('small'), Type.Literal('medium'), Type.Literal('large')]),
  order: Type.Number(),
})
export const UiInfoSchema = Type.Object({
  pages: Type.Array(UiPageSchema),
  cards: Type.Array(UiCardSchema),
  isolate: Type.Boolean(),
})

const Access = Type.Union([Type.Literal('read'), Type.Literal('write')])
export const PermissionsSchema = Type.Object(
  {
    services: Type.Record(Type.String(), Access, {
      description: "Other plugins' services it consumes, by token id, with the access it declared",
    }),
    helper: Type.Array(Type.String(), { description: 'Root helper actions it may call' }),
    network: Type.Boolean({ description: 'Outbound network from its own process' }),
    kernel: Type.Array(Type.String(), { description: "The kernel's services it uses (its deps)" }),
  },
  { description: 'What the plugin declares it needs; a third-party plugin gets exactly this' },
)

const PluginRouteSchema = Type.Object({
  method: Type.String(),
  path: Type.String(),
  role: Type.Union([Role, Type.Literal('public')]),
  sessionOnly: Type.Boolean({ description: 'Only a signed-in session may call it, never an API token' }),
})
const PluginSocketSchema = Type.Object({
  path: Type.String(),
  role: Role,
  sessionOnly: Type.Boolean({ description: 'Only a signed-in session may open it, never an API token' }),
})

export const ExtensionSchema = Type.Object({
  id: Type.String(),
  version: Type.Union([Type.String(), Type.Null()]),
  description: Type.Union([Type.String(), Type.Null()]),
  state: Type.Union([
    Type.Literal('starting'),
    Type.Literal('active'),
    Type.Literal('restarting'),
    Type.Literal('disabled'),
    Type.Literal('unavailable'),
    Type.Literal('failed'),
  ]),
  reason: Type.Optional(Type.String()),
  error: Type.Optional(Type.String()),
  errorOrigin: Type.Optional(
    Type.String({
      description: 'Where `error` came from: file:line in the plugin, or its entry when a call missed its deadline',
    }),
  ),
  warnings: Type.Optional(
    Type.Array(Type.String(), { description: 'What the plugin uses of an older contract shape, and what to change' }),
  ),
  builtin: Type.Boolean(),
  ui: Type.Union([UiInfoSchema, Type.Null()]),
  routes: Type.Union([Type.Array(PluginRouteSchema), Type.Null()], {
    description:
      'The routes it serves, with their methods and roles; null while it is not running (known once it starts)',
  }),
  sockets: Type.Union([Type.Array(PluginSocketSchema), Type.Null()], {
    description: 'The sockets it serves, with their roles; null while it is not running',
  }),
  permissions: Type.Union([PermissionsSchema, Type.Null()]),
  trusted: Type.Boolean({ description: "An admin trusts this third-party plugin to run in the daemon's process" }),
  dormantPages: Type.Optional(
    Type.Array(Type.Object({ path: Type.String(), title: Type.String(), icon: Type.Optional(Type.String()) }), {
      description:
        "The pages a disabled or failed plugin would add (those the caller's role may see), so the navigation can lead " +
        'to its entry on the Plugins page instead of a missing page',
    }),
  ),
  approval: Type.Optional(
    Type.Object(
      {
        version: Type.String(),
        asks: PermissionsSchema,
        granted: Type.Union([Type.String(), Type.Null()], {
          description: 'The version whose permissions the plugin holds now; null: a first install, granted nothing yet',
        }),
      },
      {
        description:
          'A version that asks for more than this plugin was granted, held until an admin approves it: an upgrade, or ' +
          'a first install through this API that declares services, helper actions or network',
      },
    ),
  ),
})

const IdParams = Type.Object({ id: Type.String({ pattern: '^[a-z][a-z0-9-]{0,39}$' }) })
const ApproveBody = Type.Object(
  {
    version: Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'The held version, as GET /api/extensions listed it',
    }),
  },
  { additionalProperties: false },
)
const RemoveBody = Type.Object(
  { deleteData: Type.Optional(Type.Boolean({ description: 'Also delete its data folder, settings and tables' })) },
  { additionalProperties: false },
)
const StoredDataSchema = Type.Object({
  dataFolder: Type.Union([Type.String(), Type.Null()], {
    description: 'Its data folder (<data dir>/plugin-data/<id>)',
  }),
  settings: Type.Array(Type.String(), { description: 'Its settings keys' }),
  tables: Type.Array(Type.String(), { description: 'The tables its entities declared' }),
})
export const RemovedSchema = Type.Object({ id: Type.String(), deleted: StoredDataSchema, kept: StoredDataSchema })
const TrustBody = Type.Object({ trusted: Type.Boolean() }, { additionalProperties: false })
const MAX_ARCHIVE_BYTES = 64 * 1024 * 1024

type Info = Static<typeof ExtensionSchema>

/** What became of an install, an upgrade or an approval, as its audit record names it. */
function outcomeOf(info: Info, load: LoadOutcome | null): string {
  if (!load) return 'unchanged' // the same files as the version loaded: nothing was loaded again
  if (load.result === 'failure') return 'failed'
  if (load.action === 'plugin.hold') return 'held for approval'
  return info.state
}

/**
 * The one audit record of an install or upgrade through the API: the admin as actor, the version, the outcome
 * (`active`, `disabled`, `unavailable`, `held for approval` with what it asks, `failed` with the error and where, or
 * `unchanged`), and the version it replaced (`from`). The registry writes none of its own for this load.
 */
function installRecord(id: string, replaced: boolean, info: Info, load: LoadOutcome | null) {
  const outcome = outcomeOf(info, load)
  return {
    action: replaced ? 'plugin.upgrade' : 'plugin.install',
    target: id,
    result: load?.result ?? 'success',
    detail: { version: info.version, ...load?.detail, outcome },
  }
}

async function describe(registry: PluginRegistry, id: string) {
  const info = (await registry.list('admin')).find((e) => e.id === id)
  if (!info) throw InstallErrors.badArchive(`The archive did not yield a plugin with id "${id}"`)
  return info
}

/** `GET /api/extensions` and the admin routes that change plugins. Every change is audited. */
export function extensionRoutes(r: KernelRouteRegistrar, k: KernelServices): void {
  r.get(
    '/api/extensions',
    { role: 'viewer', schema: { response: { 200: Type.Array(ExtensionSchema) } } },
    async (req) => {
      const registry = k.registry()
      const role = req.user!.role
      return (await registry.list(role)).map((info) => {
        if (info.state !== 'disabled' && info.state !== 'failed') return info
        const pages = (registry.find(info.id)?.definition?.ui?.pages ?? [])
          .filter((p) => roleSatisfies(role, p.role ?? 'viewer'))
          .map((p) => ({ path: p.path, title: p.title, ...(p.icon ? { icon: p.icon } : {}) }))
        return pages.length > 0 ? { ...info, dormantPages: pages } : info
      })
    },
  )

  r.post(
    '/api/extensions/install',
    { role: 'admin', bodyLimit: MAX_ARCHIVE_BYTES, schema: { response: { 201: ExtensionSchema } } },
    async (req, reply) => {
      if (!Buffer.isBuffer(req.body) || req.body.length === 0) {
        throw InstallErrors.badArchive(
          'Send the packed plugin (npm pack output) as the body, with Content-Type application/gzip',
        )
      }
      const registry = k.registry()
      let placed: string | null = null
      try {
        // Expected before the folder is in place: the watcher may load it first, and that load is this install too.
        const { dir, replaced } = await unpackPlugin(k.config.pluginsDir, req.body, (folder) => {
          placed = folder
          registry.expectInstall(folder)
        })
        const record = await registry.reconcile(dir, false)
        const outcome = registry.installOutcome(dir)
        placed = null
        if (!record) throw InstallErrors.badArchive()
        const info = await describe(registry, record.id)
        await k.audit.record(installRecord(record.id, replaced, info, outcome), req)
        return reply.code(201).send(info)
      } finally {
        if (placed) registry.installOutcome(placed)
      }
    },
  )

  r.post(
    '/api/extensions/:id/enable',
    { role: 'admin', schema: { params: IdParams, response: { 200: ExtensionSchema } } },
    async (req) => {
      await k.registry().enable(req.params.id)
      await k.audit.record({ action: 'plugin.enable', target: req.params.id }, req)
      return describe(k.registry(), req.params.id)
    },
  )

  r.post(
    '/api/extensions/:id/disable',
    { role: 'admin', schema: { params: IdParams, response: { 200: ExtensionSchema } } },
    async (req) => {
      await k.registry().disable(req.params.id)
      await k.audit.record({ action: 'plugin.disable', target: req.params.id }, req)
      return describe(k.registry(), req.params.id)
    },
  )

  // Granting more, and trusting a plugin with the daemon's process, are changes to what code runs with which rights:
  // a person's session whose password was given in the last few minutes, like changes to users.
  r.post(
    '/api/extensions/:id/approve',
    {
      role: 'admin',
      recentSignIn: true,
      schema: { params: IdParams, body: ApproveBody, response: { 200: ExtensionSchema } },
    },
    async (req) => {
      const registry = k.registry()
      const asks = (await registry.list('admin')).find((e) => e.id === req.params.id)?.approval?.asks ?? null
      // Its load is the approval's outcome: one record, with what became of it.
      const dir = registry.find(req.params.id)?.dir ?? null
      if (dir) registry.expectInstall(dir)
      let record: Awaited<ReturnType<typeof registry.approve>>
      let outcome: LoadOutcome | null
      try {
        record = await registry.approve(req.params.id, req.body.version)
      } finally {
        outcome = dir ? registry.installOutcome(dir) : null
      }
      const info = await describe(registry, record.id)
      await k.audit.record(
        {
          action: 'plugin.approve',
          target: req.params.id,
          result: outcome?.result ?? 'success',
          detail: { ...outcome?.detail, version: req.body.version, granted: asks, outcome: outcomeOf(info, outcome) },
        },
        req,
      )
      return info
    },
  )

  r.post(
    '/api/extensions/:id/trust',
    {
      role: 'admin',
      recentSignIn: true,
      schema: { params: IdParams, body: TrustBody, response: { 200: ExtensionSchema } },
    },
    async (req) => {
      const registry = k.registry()
      if (!registry.find(req.params.id)) throw KernelErrors.pluginNotFound(`No plugin "${req.params.id}" is installed`)
      await registry.setTrusted(req.params.id, req.body.trusted)
      await k.audit.record(
        { action: 'plugin.trust', target: req.params.id, detail: { trusted: req.body.trusted } },
        req,
      )
      return describe(registry, req.params.id)
    },
  )

  // Without a body: 204, as before (its data kept). With one: 200, what was deleted and what was kept. Deleting its
  // data too is a change like trusting one: a person's session with a recent sign-in (checked here, since it depends on
  // the body: removal alone stays open to API tokens).
  r.post(
    '/api/extensions/:id/remove',
    { role: 'admin', schema: { params: IdParams, response: { 200: RemovedSchema } } },
    async (req, reply) => {
      // Validated here: a schema would refuse the request without a body that removal has always taken.
      const body: unknown = req.body
      if (body !== undefined && !Value.Check(RemoveBody, body))
        throw KernelErrors.validation('The body is optional: {} or { "deleteData": true } (or false), nothing else')
      const deleteData = (body as Static<typeof RemoveBody> | undefined)?.deleteData === true
      if (deleteData) {
        if (req.apiToken) throw KernelErrors.sessionRequired()
        if (!req.sessionToken || !k.sessions.recentlyAuthenticated(req.sessionToken))
          throw KernelErrors.reauthRequired()
      }
      const registry = k.registry()
      const record = registry.find(req.params.id)
      if (!record) throw KernelErrors.pluginNotFound(`No plugin "${req.params.id}" is installed`)
      if (record.builtin || !record.dir) throw InstallErrors.builtin()
      const entities = record.definition?.entities ?? []
      if (deleteData) await checkDataFolder(k.config.dataDir, req.params.id)
      await deletePluginFolder(k.config.pluginsDir, record.dir)
      await registry.reconcile(record.dir, false)
      await registry.forget(req.params.id)
      const id = req.params.id
      const stored = await registry.storedData(id, entities, deleteData)
      const folder = deleteData
        ? await deleteDataFolder(k.config.dataDir, id)
        : await dataFolderOf(k.config.dataDir, id)
      const data = { dataFolder: folder, settings: stored.settings, tables: stored.tables }
      const none = { dataFolder: null, settings: [], tables: [] }
      const answer = { id, deleted: deleteData ? data : none, kept: deleteData ? none : data }
      await k.audit.record(
        { action: 'plugin.remove', target: id, detail: { deleteData, deleted: answer.deleted, kept: answer.kept } },
        req,
      )
      if (body === undefined) return reply.code(204).send()
      return answer
    },
  )
}
