/**
 * `extraArgs`: docker-run flags parsed by an allowlist into the same spec as the RunSpec's own fields, never handed
 * to a shell or to the docker CLI. A flag not in the table is a 400 naming it.
 */
import { ContainerErrors } from '../errors.ts'
import type { NormalizedSpec } from '../runspec.ts'
import { parseDevice, parseExtraHost, parseMountFlag, parsePort, parseSize, parseTmpfs, parseVolume } from './values.ts'

/** docker run flags hostd understands in extraArgs, with whether each takes a value. */
const FLAGS: Record<string, { value: boolean; apply: (spec: NormalizedSpec, v: string) => void }> = {
  '--env': {
    value: true,
    apply: (s, v) => {
      // docker run -e NAME copies NAME from the client's environment; hostd has none to copy from.
      if (!/^[^=]+=/.test(v)) throw ContainerErrors.invalidSpec(`extraArgs: --env "${v}" must be NAME=value`)
      s.env.push(v)
    },
  },
  '--publish': { value: true, apply: (s, v) => s.ports.push(parsePort(v)) },
  '--volume': { value: true, apply: (s, v) => s.volumes.push(parseVolume(v)) },
  '--mount': { value: true, apply: (s, v) => s.mounts.push(parseMountFlag(v)) },
  '--device': { value: true, apply: (s, v) => s.devices.push(parseDevice(v)) },
  '--cap-add': { value: true, apply: (s, v) => s.capAdd.push(v) },
  '--cap-drop': { value: true, apply: (s, v) => s.capDrop.push(v) },
  '--dns': { value: true, apply: (s, v) => s.dns.push(v) },
  '--tmpfs': { value: true, apply: (s, v) => Object.assign(s.tmpfs, parseTmpfs([v])) },
  '--workdir': { value: true, apply: (s, v) => (s.workdir = v) },
  '--user': { value: true, apply: (s, v) => (s.user = v) },
  '--name': { value: true, apply: (s, v) => (s.name = v) },
  '--network': { value: true, apply: (s, v) => (s.network = v) },
  '--net': { value: true, apply: (s, v) => (s.network = v) },
  '--restart': { value: true, apply: (s, v) => (s.restartPolicy = v) },
  '--label': {
    value: true,
    apply: (s, v) => {
      const [k, val] = v.split(/=(.*)/s)
      if (!k) throw ContainerErrors.invalidSpec(`extraArgs: --label "${v}" has no name`)
      s.labels[k] = val ?? ''
    },
  },
  '--hostname': { value: true, apply: (s, v) => (s.hostname = v) },
  '--add-host': { value: true, apply: (s, v) => s.extraHosts.push(parseExtraHost(v)) },
  '--cpus': {
    value: true,
    apply: (s, v) => {
      if (!/^[0-9]+(\.[0-9]+)?$/.test(v))
        throw ContainerErrors.invalidSpec(`extraArgs: --cpus "${v}" is not a number such as 1.5`)
      s.cpus = Number(v)
    },
  },
  '--memory': { value: true, apply: (s, v) => (s.memory = parseSize(v)) },
  '--shm-size': { value: true, apply: (s, v) => (s.shmSize = parseSize(v)) },
  // docker run --entrypoint takes one word (the program), not a command line.
  '--entrypoint': { value: true, apply: (s, v) => (s.entrypoint = [v]) },
  '--pid': { value: true, apply: (s, v) => (s.pidMode = v) },
  '--ipc': { value: true, apply: (s, v) => (s.ipcMode = v) },
  '--uts': { value: true, apply: (s, v) => (s.utsMode = v) },
  '--userns': { value: true, apply: (s, v) => (s.usernsMode = v) },
  '--cgroupns': { value: true, apply: (s, v) => (s.cgroupnsMode = v) },
  '--security-opt': { value: true, apply: (s, v) => s.securityOpt.push(v) },
  '--privileged': { value: false, apply: (s, v) => (s.privileged = v !== 'false') },
  '--read-only': { value: false, apply: (s, v) => (s.readOnly = v !== 'false') },
  '--init': { value: false, apply: (s, v) => (s.init = v !== 'false') },
}
const SHORT: Record<string, string> = {
  '-e': '--env',
  '-p': '--publish',
  '-v': '--volume',
  '-w': '--workdir',
  '-u': '--user',
  '-m': '--memory',
  '-h': '--hostname',
  '-l': '--label',
}

/** Parses docker-run flags into the spec. Anything not on the allowlist is a 400 naming the flag. */
export function applyExtraArgs(spec: NormalizedSpec, args: string[]): void {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (!arg.startsWith('-'))
      throw ContainerErrors.invalidSpec(
        `extraArgs: "${arg}" is not a flag (give the image and command in their own fields)`,
      )
    let [flag, inline] = arg.startsWith('--')
      ? (arg.split(/=(.*)/s) as [string, string | undefined])
      : [arg.slice(0, 2), arg.length > 2 ? arg.slice(2).replace(/^=/, '') : undefined]
    flag = SHORT[flag] ?? flag
    const def = FLAGS[flag]
    if (!def) throw ContainerErrors.invalidSpec(`extraArgs: flag "${flag}" is not allowed`)
    let value = inline
    if (!def.value && value !== undefined && value !== 'true' && value !== 'false')
      throw ContainerErrors.invalidSpec(`extraArgs: flag "${flag}" is true or false, not "${value}"`)
    if (def.value && value === undefined) {
      value = args[++i]
      if (value === undefined) throw ContainerErrors.invalidSpec(`extraArgs: flag "${flag}" needs a value`)
    }
    def.apply(spec, value ?? 'true')
  }
}
