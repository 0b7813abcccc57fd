import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { TestKernel } from '@hostd/sdk/testing'

export const b64 = (text: string | Buffer) => Buffer.from(text).toString('base64')

/** A SKILL.md with frontmatter. */
export function skillMd(fields: Record<string, unknown>, body = '# Steps\n\n1. Do the thing.\n'): string {
  const yaml = Object.entries(fields)
    .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
    .join('\n')
  return `---\n${yaml}\n---\n${body}`
}

export async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = []
  const walk = async (d: string, rel: string) => {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      const path = rel ? `${rel}/${e.name}` : e.name
      if (e.isDirectory()) await walk(join(d, e.name), path)
      else out.push(`${path}:${(await stat(join(d, e.name))).size}`)
    }
  }
  await walk(dir, '')
  return out.sort()
}

/**
 * Everything a skills request could change: the plugin's tables (read through the daemon's own SQLite
 * connection), the blob store on disk and the audit log's length. Equal snapshots: nothing changed.
 */
export async function snapshot(t: TestKernel): Promise<unknown> {
  const db = t.kernel.db.native
  return {
    skills: db.prepare('select * from skills order by id').all(),
    revisions: db.prepare('select * from skills_revisions order by id').all(),
    drafts: db.prepare('select * from skills_drafts order by id').all(),
    audit: db.prepare('select count(*) as n from audit').get(),
    disk: await listFiles(join(t.kernel.config.dataDir, 'skills', 'blobs')),
    tmp: await listFiles(join(t.kernel.config.dataDir, 'skills', 'tmp')),
  }
}

/** Every blob hash on disk, and every hash the database refers to. */
export async function blobRefs(t: TestKernel): Promise<{ onDisk: string[]; referenced: string[] }> {
  const db = t.kernel.db.native
  const referenced = new Set<string>()
  for (const row of db
    .prepare(
      'select markdown_sha as m, files as f from skills_revisions union all select markdown_sha, files from skills_drafts',
    )
    .all() as { m: string; f: string }[]) {
    referenced.add(row.m)
    for (const f of JSON.parse(row.f) as { sha256: string }[]) referenced.add(f.sha256)
  }
  const onDisk = (await listFiles(join(t.kernel.config.dataDir, 'skills', 'blobs'))).map(
    (p) => p.split('/')[1]!.split(':')[0]!,
  )
  return { onDisk: onDisk.sort(), referenced: [...referenced].sort() }
}

export async function auditActions(
  t: TestKernel,
): Promise<{ action: string; target: string | null; detail: string | null }[]> {
  return t.kernel.db.native
    .prepare("select action, target, detail from audit where action like 'skill.%' order by id")
    .all() as never
}
