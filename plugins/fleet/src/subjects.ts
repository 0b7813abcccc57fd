/**
 * The fleet's NATS subjects and the permissions each member's NATS user gets (README.md, "Subjects and
 * permissions"): a member publishes requests only in its own name and subscribes only to requests for itself.
 */

/** The JetStream key-value bucket of presence and inventory: one key per member. */
export const PRESENCE_BUCKET = 'hostd_fleet'

/** A host name: also a subject token and a key, so lowercase letters, digits and dashes. */
export const HOST_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/

/** Requests for `target` sent by `origin`. */
export const requestSubject = (target: string, origin: string) => `hostd.fleet.req.${target}.${origin}`

/** A streamed answer's pieces, from `origin` (the member answering) to `target` (the caller). */
export const streamSubject = (target: string, origin: string, id: string) =>
  `hostd.fleet.stream.${target}.${origin}.${id}`

/** Each member's own inbox prefix, so no member can read another's replies. */
export const inboxPrefix = (host: string) => `_INBOX_${host}`

export interface NatsPermissions {
  publish: { allow: string[]; deny: string[] }
  subscribe: { allow: string[] }
  allow_responses: { max: number; expires: string }
}

/** What member `host` may publish and subscribe to: its own requests and presence key, the KV bucket's reads. */
export function memberPermissions(host: string): NatsPermissions {
  return {
    publish: {
      allow: [
        `hostd.fleet.req.*.${host}`,
        `hostd.fleet.stream.*.${host}.*`,
        `$KV.${PRESENCE_BUCKET}.${host}`,
        `$JS.API.INFO`,
        `$JS.API.STREAM.INFO.KV_${PRESENCE_BUCKET}`,
        `$JS.API.STREAM.CREATE.KV_${PRESENCE_BUCKET}`,
        `$JS.API.STREAM.MSG.GET.KV_${PRESENCE_BUCKET}`,
        `$JS.API.DIRECT.GET.KV_${PRESENCE_BUCKET}.>`,
        `$JS.API.CONSUMER.CREATE.KV_${PRESENCE_BUCKET}.>`,
        `$JS.API.CONSUMER.CREATE.KV_${PRESENCE_BUCKET}`,
        `$JS.API.CONSUMER.DELETE.KV_${PRESENCE_BUCKET}.>`,
        `$JS.API.CONSUMER.INFO.KV_${PRESENCE_BUCKET}.>`,
        `$JS.FC.KV_${PRESENCE_BUCKET}.>`,
        `$JS.ACK.KV_${PRESENCE_BUCKET}.>`,
      ],
      deny: [],
    },
    subscribe: { allow: [`hostd.fleet.req.${host}.*`, `hostd.fleet.stream.${host}.*.*`, `${inboxPrefix(host)}.>`] },
    // Answers go to the reply subject of a request it received, once, within a minute: nowhere else.
    allow_responses: { max: 1, expires: '1m' },
  }
}

export interface ServerUser {
  user: string
  password: string
  /** The member this user is; omitted for a user with no limits (an operator's own tools). */
  host?: string
}

export interface ServerConfigOptions {
  name: string
  host?: string
  port: number
  storeDir: string
  users: ServerUser[]
  cluster?: { name: string; port: number; routes: string[] }
}

/** A nats-server configuration (its parser reads JSON) with one user per member, each limited as above. */
export function renderServerConfig(o: ServerConfigOptions): string {
  const config: Record<string, unknown> = {
    server_name: o.name,
    host: o.host ?? '127.0.0.1',
    port: o.port,
    jetstream: { store_dir: o.storeDir, max_memory_store: 64 * 1024 * 1024, max_file_store: 256 * 1024 * 1024 },
    authorization: {
      users: o.users.map((u) =>
        u.host
          ? { user: u.user, password: u.password, permissions: memberPermissions(u.host) }
          : { user: u.user, password: u.password },
      ),
    },
  }
  if (o.cluster)
    config.cluster = {
      name: o.cluster.name,
      host: o.host ?? '127.0.0.1',
      port: o.cluster.port,
      routes: o.cluster.routes,
    }
  return `${JSON.stringify(config, null, 2)}\n`
}
