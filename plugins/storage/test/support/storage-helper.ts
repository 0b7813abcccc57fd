import { startHelper, type RunningHelper } from '../../../../helper/test/start-helper.ts'

/**
 * The real root helper (helper/hostd-helper.py) with the storage settings it reads from its environment
 * (HOSTD_HELPER_SMB_CONF, _SMB_SHARES, _EXPORT_ROOTS, _MOUNT_ROOT, _CREDENTIALS_DIR).
 */
export type StorageHelper = RunningHelper

export function startStorageHelper(
  env: Record<string, string>,
  options: { dryRun?: boolean } = {},
): Promise<StorageHelper> {
  return startHelper({ env, dryRun: options.dryRun })
}
