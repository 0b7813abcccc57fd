/**
 * A real apt and dpkg working on an isolated root in a temporary directory, so tests install, upgrade and remove
 * real packages without touching the machine's own package database (host-features.md section 5, measured recipe):
 * tiny packages built with `dpkg-deb`, a flat repository indexed by `apt-ftparchive`, and an APT_CONFIG that
 * points every apt and dpkg path (lists, cache, status, logs, dpkg's --root and --admindir) into the directory.
 * Needs dpkg-dev (dpkg-deb) and apt-utils (apt-ftparchive).
 */
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** SHA-256 of the machine's own dpkg database: the same before and after a test that used an isolated root. */
export function machineDpkgStatusHash(): string {
  return createHash('sha256').update(readFileSync('/var/lib/dpkg/status')).digest('hex')
}

export interface DemoPackage {
  name: string
  version: string
  summary: string
  /** A postinst that waits until `release()` is called: a job that runs exactly as long as a test wants. */
  gated?: boolean
  /** The control file's Depends (e.g. another demo package, or one no repository has). */
  depends?: string
  /** `Essential: yes`: one the system needs (the packages plugin refuses to remove it). */
  essential?: boolean
}

export interface AptRoot {
  dir: string
  /** The APT_CONFIG file: give it to the root helper (HOSTD_HELPER_APT_CONFIG) and to the packages plugin. */
  aptConfig: string
  /** dpkg's database directory of the isolated root (`dpkg-query --admindir`). */
  admindir: string
  /** Builds the packages and rewrites the repository index (apt sees them after an `apt-get update`). */
  publish(...packages: DemoPackage[]): Promise<void>
  /** What the isolated dpkg database holds: name -> version, installed packages only, read with dpkg-query. */
  installed(): Promise<Record<string, string>>
  /** Lets every gated postinst finish. */
  release(): Promise<void>
  remove(): Promise<void>
}

export async function createAptRoot(): Promise<AptRoot> {
  const dir = await mkdtemp(join(tmpdir(), 'hostd-apt-'))
  await chmod(dir, 0o755) // apt may read the repository as _apt
  const root = join(dir, 'root')
  const admindir = join(root, 'var', 'lib', 'dpkg')
  const repo = join(dir, 'repo')
  const gate = join(dir, 'gate')
  for (const sub of [
    join(admindir, 'info'),
    join(admindir, 'updates'),
    repo,
    join(dir, 'build'),
    join(dir, 'empty.d'),
    join(dir, 'state', 'lists', 'partial'),
    join(dir, 'cache', 'archives', 'partial'),
    join(dir, 'log'),
  ]) {
    await mkdir(sub, { recursive: true })
  }
  await writeFile(join(admindir, 'status'), '')
  await writeFile(join(dir, 'sources.list'), `deb [trusted=yes] file:${repo} ./\n`)
  // Acquire::Retries 0: apt retries a failed fetch three times with a growing delay (7 s for a mirror that does not
  // resolve); the local repository never needs a retry.
  const aptConfig = join(dir, 'apt.conf')
  await writeFile(
    aptConfig,
    `Dir::Etc::parts "${dir}/empty.d";
Dir::Etc::sourcelist "${dir}/sources.list";
Dir::Etc::sourceparts "-";
Dir::Etc::preferences "${dir}/empty.d/none";
Dir::Etc::preferencesparts "${dir}/empty.d";
Dir::State "${dir}/state";
Dir::State::Lists "${dir}/state/lists";
Dir::State::status "${admindir}/status";
Dir::Cache "${dir}/cache";
Dir::Log "${dir}/log";
APT::Get::List-Cleanup "0";
DPkg::Options {"--root=${root}"; "--admindir=${admindir}"; "--log=${dir}/log/dpkg.log"; "--force-not-root"; "--force-script-chrootless";};
Debug::NoLocking "1";
APT::Sandbox::User "root";
Acquire::Retries "0";
`,
  )

  async function build(pkg: DemoPackage): Promise<void> {
    const tree = join(dir, 'build', `${pkg.name}-${pkg.version}`)
    await mkdir(join(tree, 'DEBIAN'), { recursive: true })
    await mkdir(join(tree, 'usr', 'share', pkg.name), { recursive: true })
    await writeFile(join(tree, 'usr', 'share', pkg.name, 'version'), `${pkg.version}\n`)
    await writeFile(
      join(tree, 'DEBIAN', 'control'),
      [
        `Package: ${pkg.name}`,
        `Version: ${pkg.version}`,
        'Architecture: all',
        'Maintainer: hostd tests <tests@example.invalid>',
        'Installed-Size: 8',
        ...(pkg.depends ? [`Depends: ${pkg.depends}`] : []),
        ...(pkg.essential ? ['Essential: yes'] : []),
        `Description: ${pkg.summary}`,
        ' A package built by the hostd tests.',
        '',
      ].join('\n'),
    )
    if (pkg.gated) {
      const postinst = join(tree, 'DEBIAN', 'postinst')
      await writeFile(postinst, `#!/bin/sh\nwhile [ ! -e '${gate}' ]; do sleep 0.05; done\nexit 0\n`)
      await chmod(postinst, 0o755)
    }
    await run('dpkg-deb', ['--root-owner-group', '--build', tree, join(repo, `${pkg.name}_${pkg.version}_all.deb`)])
  }

  return {
    dir,
    aptConfig,
    admindir,
    async publish(...packages) {
      for (const pkg of packages) await build(pkg)
      const { stdout: index } = await run('apt-ftparchive', ['packages', '.'], { cwd: repo })
      await writeFile(join(repo, 'Packages'), index)
      const { stdout: release } = await run('apt-ftparchive', ['release', '.'], { cwd: repo })
      await writeFile(join(repo, 'Release'), release)
    },
    async installed() {
      const { stdout } = await run('dpkg-query', [
        `--admindir=${admindir}`,
        '-W',
        '-f',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's --showformat syntax, not a JS template
        '${Package}\\t${Version}\\t${db:Status-Status}\\n',
      ])
      const rows = stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split('\t'))
      return Object.fromEntries(rows.filter((r) => r[2] === 'installed').map((r) => [r[0]!, r[1]!]))
    },
    async release() {
      await writeFile(gate, '')
    },
    async remove() {
      await rm(dir, { recursive: true, force: true })
    },
  }
}
