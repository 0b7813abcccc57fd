/**
 * The engine's known errors, translated: each rule turns the engine's raw text into one of this plugin's errors whose
 * message names the cause and the next step; the raw text stays in the answer's `details.raw`. The patterns are the
 * engine's own words (Docker 20.10 to 27; see test/engine-errors.test.ts, which produces each with a real engine).
 * errors.ts applies them (`engineError`) and names the container holding a clashing port (`explainPortOwner`).
 */

/** Which of ContainerErrors (errors.ts) a rule answers with: named here so this file stays the engine's words only. */
export type TranslatedError =
  | 'portInUse'
  | 'registryUnreachable'
  | 'registryRateLimited'
  | 'imageNotFound'
  | 'nameInUse'
  | 'commandNotFound'
  | 'mountSourceMissing'
  | 'notRunning'
  | 'networkNotFound'
  | 'noSpace'

export interface Rule {
  pattern: RegExp
  error: TranslatedError
  message: (m: RegExpExecArray, raw: string) => string
}

/** The registry's host in `Get "https://registry-1.docker.io/v2/": ...`, else "". */
function registryHost(raw: string): string {
  return /Get "https?:\/\/([^/"]+)/.exec(raw)?.[1] ?? /lookup ([^\s:]+)/.exec(raw)?.[1] ?? ''
}

const unreachable = (_m: RegExpExecArray, raw: string) => {
  const host = registryHost(raw)
  return `No internet connection (or the registry${host ? ` ${host}` : ''} is unreachable): check this host's network and DNS, then try again`
}

export const ENGINE_ERROR_RULES: Rule[] = [
  {
    // "driver failed programming external connectivity on endpoint x (...): Bind for 0.0.0.0:8082 failed: port is already allocated"
    pattern: /Bind for \S*?:(\d+) failed: port is already allocated/,
    error: 'portInUse',
    message: (m) => `Port ${m[1]} is used by another container: choose another host port, or stop that container`,
  },
  {
    // "... Error starting userland proxy: listen tcp4 0.0.0.0:8093: bind: address already in use"
    pattern: /listen (?:tcp|udp)[46]? \S*?:(\d+): bind: address already in use/,
    error: 'portInUse',
    message: (m) =>
      `Port ${m[1]} is used by another program on this host: choose another host port, or stop that program`,
  },
  {
    // 'Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io on 127.0.0.53:53: no such host'
    pattern:
      /no such host|server misbehaving|network is unreachable|i\/o timeout|Client\.Timeout exceeded|TLS handshake timeout|connect: connection refused/,
    error: 'registryUnreachable',
    message: unreachable,
  },
  {
    pattern: /toomanyrequests|pull rate limit/i,
    error: 'registryRateLimited',
    message: () =>
      'The registry refuses more pulls for now (its rate limit): wait a few hours, or sign in to the registry on this host',
  },
  {
    // "manifest for 127.0.0.1:5000/nothing:1 not found: manifest unknown: manifest unknown";
    // "pull access denied for nothing, repository does not exist or may require 'docker login'"; "No such image: x:1"
    pattern:
      /(?:manifest for (\S+) not found)|(?:pull access denied for ([^,\s]+))|(?:No such image: (\S+))|manifest unknown|name unknown/,
    error: 'imageNotFound',
    message: (m) => {
      const ref = m[1] ?? m[2] ?? m[3]
      const what = ref ? `The image ${ref}` : 'The image'
      return `${what} was not found in its registry: check the name and tag (a private image needs the registry's sign-in on this host)`
    },
  },
  {
    // 'Conflict. The container name "/web" is already in use by container "2e1a...". You have to remove (or rename) ...'
    pattern: /The container name "\/?([^"]+)" is already in use/,
    error: 'nameInUse',
    message: (m) =>
      `The name ${m[1]} is already used by another container: choose another name, or remove that one first`,
  },
  {
    // '... unable to start container process: exec: "nosuchprog": executable file not found in $PATH: unknown'
    pattern: /exec: "([^"]+)": (?:executable file not found|stat [^:]+: no such file or directory)/,
    error: 'commandNotFound',
    message: (m) => `The command ${m[1]} is not in the image: correct the command (or the entrypoint)`,
  },
  {
    // 'invalid mount config for type "bind": bind source path does not exist: /srv/x'
    pattern: /bind source path does not exist: (\S+)/,
    error: 'mountSourceMissing',
    message: (m) => `The host folder ${m[1]} does not exist: create it first, or correct the path`,
  },
  {
    // "Container 2e1a... is not running"
    pattern: /Container [0-9a-f]+ is (?:not running|paused|restarting)/,
    error: 'notRunning',
    message: () => 'The container is not running: start it first',
  },
  {
    pattern: /network (\S+) not found/,
    error: 'networkNotFound',
    message: (m) => `There is no network ${m[1]}: create it on the Networks tab, or choose another`,
  },
  {
    pattern: /no space left on device/,
    error: 'noSpace',
    message: () => "The engine's disk is full: free space (remove unused images on the Images tab), then try again",
  },
]

/** Where the port number sits in the engine's "port is already allocated" text (a clash between containers). */
export const ALLOCATED_PORT = /Bind for \S*?:(\d+) failed: port is already allocated/
