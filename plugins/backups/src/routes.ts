/** The routes (all admins only): repositories, jobs and runs, snapshots and restores. Shapes in schemas.ts. */
import type { RouteRegistrar, SocketRegistrar } from '@hostd/sdk'
import { sendJson } from '@hostd/sdk'
import { BackupErrors } from './errors.ts'
import {
  ContainerChoiceSchema,
  FileListSchema,
  FilesQuery,
  IdParams,
  JobCreateSchema,
  JobListSchema,
  JobSchema,
  JobUpdateSchema,
  RepositoryCreatedSchema,
  RepositoryCreateSchema,
  RepositoryListSchema,
  RestoreContainerResultSchema,
  RestoreContainerSchema,
  RestoreResultSchema,
  RestoreSchema,
  RunQuery,
  RunResultSchema,
  SnapshotListSchema,
  SnapshotParams,
  SshKeySchema,
} from './schemas.ts'
import type { BackupService } from './service.ts'

const tags = ['backups']
const BASE = '/api/backups'

export function backupRoutes(r: RouteRegistrar, b: BackupService): void {
  // ---- repositories ----
  r.get(
    `${BASE}/repositories`,
    { role: 'admin', schema: { tags, response: { 200: RepositoryListSchema } } },
    async () => ({
      items: await b.listRepositories(),
    }),
  )

  r.post(
    `${BASE}/repositories`,
    {
      role: 'admin',
      schema: {
        tags,
        body: RepositoryCreateSchema,
        response: { 201: RepositoryCreatedSchema },
        description:
          'Creates (restic init) or opens a repository and stores it, its secrets sealed. Nothing is stored when ' +
          'restic fails. A new repository answers its recovery kit this once.',
      },
    },
    async (req, reply) => reply.code(201).send(await b.createRepository(req.body, req)),
  )

  r.post(
    `${BASE}/repositories/:id/delete`,
    {
      role: 'admin',
      schema: { tags, params: IdParams, description: 'Forgets it; the repository itself is left as it is' },
    },
    (req) => b.removeRepository(req.params.id, req),
  )

  r.get(
    `${BASE}/ssh-key`,
    {
      role: 'admin',
      schema: {
        tags,
        response: { 200: SshKeySchema },
        description: "hostd's SSH public key for SFTP repositories (made on first use)",
      },
    },
    async () => ({ publicKey: await b.repositories.publicKey() }),
  )

  r.get(
    `${BASE}/repositories/:id/snapshots`,
    { role: 'admin', schema: { tags, params: IdParams, response: { 200: SnapshotListSchema } } },
    async (req) => ({ items: await b.snapshots(req.params.id) }),
  )

  r.get(
    `${BASE}/repositories/:id/snapshots/:snapshot/files`,
    {
      role: 'admin',
      schema: {
        tags,
        params: SnapshotParams,
        querystring: FilesQuery,
        response: { 200: FileListSchema },
        description: 'The entries of one folder of the snapshot (restic ls --json)',
      },
    },
    (req) => b.files(req.params.id, req.params.snapshot, req.query.path),
  )

  r.post(
    `${BASE}/repositories/:id/snapshots/:snapshot/restore`,
    {
      role: 'admin',
      schema: { tags, params: SnapshotParams, body: RestoreSchema, response: { 200: RestoreResultSchema } },
    },
    (req) => b.restore(req.params.id, req.params.snapshot, req.body, req),
  )

  r.post(
    `${BASE}/repositories/:id/snapshots/:snapshot/restore-container`,
    {
      role: 'admin',
      schema: {
        tags,
        params: SnapshotParams,
        body: RestoreContainerSchema,
        response: { 200: RestoreContainerResultSchema },
        description:
          'Restores a container the snapshot holds: its named volumes (created when missing) and bind folders, then ' +
          'the container from its definition, started when it ran at backup time. 409 while a container has its name.',
      },
    },
    (req) => b.restoreContainer(req.params.id, req.params.snapshot, req.body.name, req),
  )

  // ---- jobs ----
  r.get(`${BASE}/jobs`, { role: 'admin', schema: { tags, response: { 200: JobListSchema } } }, async () => ({
    items: await b.listJobs(),
  }))

  r.post(
    `${BASE}/jobs`,
    { role: 'admin', schema: { tags, body: JobCreateSchema, response: { 201: JobSchema } } },
    async (req, reply) => reply.code(201).send(await b.createJob(req.body, req)),
  )

  r.get(
    `${BASE}/jobs/:id`,
    { role: 'admin', schema: { tags, params: IdParams, response: { 200: JobSchema } } },
    (req) => b.getJob(req.params.id),
  )

  r.post(
    `${BASE}/jobs/:id/update`,
    { role: 'admin', schema: { tags, params: IdParams, body: JobUpdateSchema, response: { 200: JobSchema } } },
    (req) => b.updateJob(req.params.id, req.body, req),
  )

  r.post(`${BASE}/jobs/:id/delete`, { role: 'admin', schema: { tags, params: IdParams } }, (req) =>
    b.removeJob(req.params.id, req),
  )

  r.post(
    `${BASE}/jobs/:id/run`,
    {
      role: 'admin',
      schema: {
        tags,
        params: IdParams,
        querystring: RunQuery,
        response: { 200: RunResultSchema, 202: JobSchema },
        description:
          'Starts a run (or joins the one in progress): 202 with the job at once; with `wait=true`, 200 with the ' +
          "run's result once it ends, or the run's error (its code and status) when it failed.",
      },
    },
    async (req, reply) => {
      const { done } = await b.run(req.params.id, req)
      if (!req.query.wait) return reply.code(202).send(await b.getJob(req.params.id))
      const result = await done
      if (result.status === 'failure' && result.error) {
        const factory =
          Object.values(BackupErrors).find((e) => e.code === result.error!.code) ?? BackupErrors.resticFailed
        throw factory(result.error.message)
      }
      return result
    },
  )

  r.get(`${BASE}/containers`, { role: 'admin', schema: { tags, response: { 200: ContainerChoiceSchema } } }, () =>
    b.containerChoices(),
  )
}

/** Live progress and results of every run: `{ type: 'progress', ...Progress }` and `{ type: 'result', jobId, result }`. */
export function backupSockets(s: SocketRegistrar, b: BackupService): void {
  s.ws(`${BASE}/live`, { role: 'admin' }, async (socket, ctx) => {
    const forward = (message: unknown) => sendJson(socket, message)
    b.events.on('message', forward)
    for (const job of await b.listJobs()) if (job.progress) forward({ type: 'progress', ...job.progress })
    await new Promise<void>((resolve) => {
      if (ctx.signal.aborted) return resolve()
      ctx.signal.addEventListener('abort', () => resolve(), { once: true })
      socket.once('close', () => resolve())
    })
    b.events.off('message', forward)
  })
}
