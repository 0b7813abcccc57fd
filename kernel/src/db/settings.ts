import type { Settings } from '@hostd/sdk'
import type { KernelDatabase } from './database.ts'
import { SettingEntity } from './entities.ts'

/** Key-value settings, one scope per plugin (and `kernel` for the kernel's own). */
export function scopedSettings(db: KernelDatabase, scope: string): Settings {
  return {
    async get<T>(key: string) {
      const row = await db.em().findOne(SettingEntity, { scope, key })
      return row ? (row.value as T) : undefined
    },
    async set(key, value) {
      const em = db.em()
      await em.upsert(SettingEntity, { scope, key, value: value as object })
    },
    async delete(key) {
      await db.em().nativeDelete(SettingEntity, { scope, key })
    },
  }
}
