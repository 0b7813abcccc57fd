/**
 * REST routes under /api/stacks: viewers read, operators edit and run stacks (the containers plugin's role rules
 * then judge every service), admins adopt projects the compose CLI made.
 */
import { Type, type RouteRegistrar } from '@hostd/sdk'
import {
  AdoptBody,
  CreateBody,
  DeployBody,
  DeployResultSchema,
  DownBody,
  DownResultSchema,
  LifecycleResultSchema,
  NameParams,
  SaveBody,
  ServiceParams,
  StackDetailSchema,
  StackListSchema,
  ValidateBody,
  ValidationSchema,
} from './schemas.ts'
import type { StacksService } from './service.ts'

const tags = ['stacks']

export function stackRoutes(r: RouteRegistrar, stacks: () => StacksService): void {
  r.get(
    '/api/stacks',
    {
      role: 'viewer',
      schema: {
        tags,
        response: { 200: StackListSchema },
        description: "Stacks (one folder each) with their services' states, and compose projects that may be adopted.",
      },
    },
    () => stacks().list(),
  )

  r.post(
    '/api/stacks',
    {
      role: 'operator',
      schema: {
        tags,
        body: CreateBody,
        response: { 201: Type.Object({ name: Type.String() }) },
        description: 'Creates the stack folder with its compose.yaml and .env (validated first; nothing runs yet).',
      },
    },
    async (req, reply) => reply.code(201).send(await stacks().create(req.body, req)),
  )

  r.post(
    '/api/stacks/validate',
    {
      role: 'operator',
      schema: {
        tags,
        body: ValidateBody,
        response: { 200: ValidationSchema },
        description:
          'Checks a compose file and .env as they would be saved: problems with their lines, nothing written.',
      },
    },
    (req) => stacks().validate(req.body.name, req.body.compose, req.body.env ?? '', req.body.profiles),
  )

  r.post(
    '/api/stacks/adopt',
    {
      role: 'admin',
      schema: {
        tags,
        body: AdoptBody,
        response: {
          200: Type.Object({ name: Type.String(), workingDir: Type.String(), composeFile: Type.String() }),
        },
        description: "Adopts a compose CLI project in place: its folder becomes the stack's (through a link).",
      },
    },
    (req) => stacks().adopt(req.body.project, req),
  )

  r.get(
    '/api/stacks/:name',
    { role: 'viewer', schema: { tags, params: NameParams, response: { 200: StackDetailSchema } } },
    (req) => stacks().get(req.params.name, req.user!.role),
  )

  r.post(
    '/api/stacks/:name/files',
    {
      role: 'operator',
      schema: {
        tags,
        params: NameParams,
        body: SaveBody,
        response: { 200: Type.Object({ name: Type.String(), warnings: Type.Array(Type.Unknown()) }) },
        description: 'Saves compose.yaml and/or .env, refused (400, problems with their lines) unless valid.',
      },
    },
    (req) => stacks().save(req.params.name, req.body, req),
  )

  r.post(
    '/api/stacks/:name/deploy',
    {
      role: 'operator',
      schema: {
        tags,
        params: NameParams,
        body: DeployBody,
        response: { 200: DeployResultSchema },
        description:
          'Brings the engine to the file: missing images pulled, changed services recreated, in depends_on order.',
      },
    },
    (req) => stacks().deploy(req.params.name, req.user!.role, req, { profiles: req.body.profiles }),
  )

  r.post(
    '/api/stacks/:name/update',
    {
      role: 'operator',
      schema: {
        tags,
        params: NameParams,
        body: DeployBody,
        response: { 200: DeployResultSchema },
        description: 'Pulls every image, then recreates only the services whose image or configuration changed.',
      },
    },
    (req) => stacks().deploy(req.params.name, req.user!.role, req, { profiles: req.body.profiles, pull: true }),
  )

  for (const action of ['start', 'stop', 'restart'] as const)
    r.post(
      `/api/stacks/:name/${action}`,
      { role: 'operator', schema: { tags, params: NameParams, response: { 200: LifecycleResultSchema } } },
      (req) => stacks().lifecycle(req.params.name, action, req),
    )

  r.post(
    '/api/stacks/:name/down',
    {
      role: 'operator',
      schema: {
        tags,
        params: NameParams,
        body: DownBody,
        response: { 200: DownResultSchema },
        description: "Removes the stack's containers and networks; its volumes only with volumes: true.",
      },
    },
    (req) => stacks().down(req.params.name, req, { volumes: req.body.volumes }),
  )

  r.post(
    '/api/stacks/:name/delete',
    {
      role: 'operator',
      schema: {
        tags,
        params: NameParams,
        response: { 200: Type.Object({ name: Type.String(), removed: Type.Boolean() }) },
        description: "Deletes the stack's folder (an adopted stack's link only); refused while it has containers.",
      },
    },
    (req) => stacks().remove(req.params.name, req),
  )

  r.post(
    '/api/stacks/:name/services/:service/:action',
    {
      role: 'operator',
      schema: {
        tags,
        params: ServiceParams,
        response: {
          200: Type.Object({
            name: Type.String(),
            service: Type.String(),
            containers: Type.Array(
              Type.Object({ container: Type.String(), before: Type.String(), after: Type.String() }),
            ),
          }),
        },
      },
    },
    (req) => stacks().serviceAction(req.params.name, req.params.service, req.params.action, req),
  )
}
