import { execFile } from 'node:child_process'
import { readFile, statfs } from 'node:fs/promises'
import { promisify } from 'node:util'

const run = promisify(execFile)

export interface Partition {
  name: string
  path: string
  size: number
  fstype: string | null
  label: string | null
  mountpoints: string[]
}

export interface Disk extends Omit<Partition, 'fstype' | 'label'> {
  model: string | null
  serial: string | null
  removable: boolean
  readOnly: boolean
  transport: string | null
  partitions: Partition[]
}

interface LsblkDevice {
  name: string
  path: string
  model: string | null
  serial: string | null
  size: number | string | null
  rm: boolean | string
  ro: boolean | string
  tran: string | null
  type: string
  mountpoints?: (string | null)[]
  fstype: string | null
  label: string | null
  children?: LsblkDevice[]
}

const truthy = (v: boolean | string) => v === true || v === '1'
const mounts = (d: LsblkDevice) => (d.mountpoints ?? []).filter((m): m is string => typeof m === 'string')

function partitionsOf(d: LsblkDevice): Partition[] {
  return (d.children ?? []).flatMap((c) => [
    { name: c.name, path: c.path, size: Number(c.size ?? 0), fstype: c.fstype, label: c.label, mountpoints: mounts(c) },
    ...partitionsOf(c), // LVM/crypt layers below a partition
  ])
}

/** Parses `lsblk -J -b -o NAME,PATH,MODEL,SERIAL,SIZE,RM,RO,TRAN,TYPE,MOUNTPOINTS,FSTYPE,LABEL`. */
export function parseLsblk(json: string): Disk[] {
  const devices = (JSON.parse(json) as { blockdevices: LsblkDevice[] }).blockdevices ?? []
  return devices
    .filter((d) => d.type === 'disk' || d.type === 'rom')
    .map((d) => ({
      name: d.name,
      path: d.path,
      model: d.model?.trim() || null,
      serial: d.serial?.trim() || null,
      size: Number(d.size ?? 0),
      removable: truthy(d.rm),
      readOnly: truthy(d.ro),
      transport: d.tran,
      mountpoints: mounts(d),
      partitions: partitionsOf(d),
    }))
}

export async function listDisks(): Promise<Disk[]> {
  const { stdout } = await run(
    'lsblk',
    ['-J', '-b', '-o', 'NAME,PATH,MODEL,SERIAL,SIZE,RM,RO,TRAN,TYPE,MOUNTPOINTS,FSTYPE,LABEL'],
    { maxBuffer: 8 * 1024 * 1024 },
  )
  return parseLsblk(stdout)
}

export interface MountedVolume {
  device: string
  mountpoint: string
  fstype: string
  size: number
  used: number
  free: number
}

/** Filesystems that hold user data; pseudo filesystems (proc, cgroup, overlay of containers, tmpfs...) are left out. */
const DATA_FS = new Set([
  'ext2',
  'ext3',
  'ext4',
  'xfs',
  'btrfs',
  'vfat',
  'exfat',
  'ntfs',
  'ntfs3',
  'fuseblk',
  'f2fs',
  'zfs',
  'iso9660',
  'udf',
  'cifs',
  'smb3',
  'nfs',
  'nfs4',
])

export interface MountEntry {
  device: string
  mountpoint: string
  fstype: string
}

/** /proc/self/mountinfo: fields 5 (mount point) and, after " - ", fstype and source; octal escapes decoded. */
export function parseMountinfo(text: string): MountEntry[] {
  const decodeOctal = (s: string) => s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)))
  const out: MountEntry[] = []
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ')
    if (!left || !right) continue
    const mountpoint = left.split(' ')[4]
    const [fstype, source] = right.split(' ')
    if (mountpoint && fstype)
      out.push({ device: decodeOctal(source ?? ''), mountpoint: decodeOctal(mountpoint), fstype })
  }
  return out
}

export async function readMounts(): Promise<MountEntry[]> {
  return parseMountinfo(await readFile('/proc/self/mountinfo', 'utf8'))
}

export async function mountedVolumes(): Promise<MountedVolume[]> {
  const seen = new Set<string>()
  const out: MountedVolume[] = []
  for (const m of await readMounts()) {
    if (!DATA_FS.has(m.fstype) || seen.has(m.mountpoint)) continue
    seen.add(m.mountpoint)
    const fs = await statfs(m.mountpoint).catch(() => null)
    if (!fs) continue
    const size = fs.blocks * fs.bsize
    out.push({ ...m, size, used: size - fs.bfree * fs.bsize, free: fs.bavail * fs.bsize })
  }
  return out
}
