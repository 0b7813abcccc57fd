import { afterEach, describe, expect, it, vi } from 'vitest'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineEntity, p, type EntitySchema } from '@mikro-orm/core'
import { SqlSchemaGenerator } from '@mikro-orm/sql'
import { openDatabase } from './database.ts'

const NoteEntity = defineEntity({
  name: 'Note',
  tableName: 'test_notes',
  properties: { id: p.string().primary(), text: p.string() },
})
const NoteV2Entity = defineEntity({
  name: 'Note',
  tableName: 'test_notes',
  properties: { id: p.string().primary(), text: p.string(), pinned: p.boolean().default(false) },
})

/** Opens the database the way a start does (the kernel's entities, then a plugin's), and counts the schema updates. */
async function start(dir: string, entity: EntitySchema<any, any> = NoteEntity) {
  const update = vi.spyOn(SqlSchemaGenerator.prototype, 'update')
  const db = await openDatabase(dir)
  await db.addEntities([entity])
  const updates = update.mock.calls.length
  update.mockRestore()
  const columns = (
    db.native.prepare("SELECT name FROM pragma_table_info('test_notes')").all() as { name: string }[]
  ).map((c) => c.name)
  return { db, updates, columns }
}

describe('the schema update at open', () => {
  let dir: string
  afterEach(() => rm(dir, { recursive: true, force: true }))

  it('runs on a new database, is skipped while neither the entities nor the tables change, and runs when either does', async () => {
    dir = await mkdtemp(join(tmpdir(), 'hostd-schema-'))
    const first = await start(dir)
    expect(first.updates).toBe(2)
    expect(first.columns).toEqual(['id', 'text'])
    await first.db.close()

    const again = await start(dir)
    expect(again.updates).toBe(0)
    // By hand: the plugin's table is gone. The next start sees sqlite_master differ and creates it again.
    again.db.native.exec('DROP TABLE test_notes')
    await again.db.close()
    const repaired = await start(dir)
    expect(repaired.updates).toBe(1)
    expect(repaired.columns).toEqual(['id', 'text'])
    await repaired.db.close()

    // A new version of the entity: its new column is added.
    const upgraded = await start(dir, NoteV2Entity)
    expect(upgraded.updates).toBe(1)
    expect(upgraded.columns).toEqual(['id', 'text', 'pinned'])
    await upgraded.db.close()
  })
})
