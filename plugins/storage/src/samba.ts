/**
 * Samba's own error texts, as they reach the plugin (the helper's message carries the tool's last stderr line), said as
 * their cause and the next step. The raw text stays in the error's `details.raw` (the UI shows it under "Details").
 * Checked in order (smbcontrol with a broken smb.conf prints both its load error and "Can't find pid"). Each pattern
 * is a message the real tools print (smbcontrol 4.17, systemctl): see test/exports.test.ts.
 */
import { HostdError } from '@hostd/sdk'
import { StorageErrors } from './errors.ts'

const KNOWN: [RegExp, (raw: string) => HostdError][] = [
  [
    /Can't load (\S+)/i,
    (raw) =>
      StorageErrors.smbConfInvalid(
        `Samba's configuration (${/Can't load (\S+)/i.exec(raw)?.[1]}) cannot be read: run testparm to find the error, then try again`,
        undefined,
        { raw },
      ),
  ],
  [
    /Can't find pid for destination '?smbd'?/i,
    (raw) =>
      StorageErrors.smbdNotRunning(
        'Samba (smbd) is not running, so it cannot take the change: start it (systemctl start smbd), then try again',
        undefined,
        { raw },
      ),
  ],
  [
    /Failed to connect to bus|System has not been booted with systemd/i,
    (raw) =>
      StorageErrors.serviceManagerUnreachable(
        'The service manager (systemd) cannot be reached, so Samba cannot be started or reloaded through it: start smbd ' +
          'directly (smbd -D) or run hostd on a host where systemd runs, then try again',
        undefined,
        { raw },
      ),
  ],
]

/** A known Samba error as a HOSTD_STORAGE_* error naming cause and next step; anything else as it was. */
export function translateSamba(err: unknown): unknown {
  if (!(err instanceof HostdError)) return err
  if (err.code === 'HOSTD_HELPER_PROGRAM_MISSING' && /smbcontrol|smbd/.test(err.message))
    return StorageErrors.sambaMissing(
      'Samba is not installed: install the samba package (apt install samba), then try again',
      undefined,
      { raw: err.message },
    )
  for (const [pattern, make] of KNOWN) if (pattern.test(err.message)) return make(err.message)
  return err
}
