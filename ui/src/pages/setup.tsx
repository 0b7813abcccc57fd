import { useEffect, useState } from 'preact/hooks'
import { Button } from '../kit/button.tsx'
import { Form, FieldErrors, Select, TextField } from '../kit/form.tsx'
import { completeSetup, publicApi } from '../shell/session.ts'

const PASSWORD_HINT = 'At least 8 characters; not a common password, and not containing the user name.'

export default function SetupPage() {
  const [restoring, setRestoring] = useState(false)
  const [restoreOffered, setRestoreOffered] = useState(false)
  useEffect(() => {
    // Offered when the backups plugin runs in the daemon (GET /api/setup/restore says so); nothing shown otherwise.
    publicApi
      .get<{ available: boolean }>('/api/setup/restore')
      .then((r) => setRestoreOffered(r.available))
      .catch(() => setRestoreOffered(false))
  }, [])
  if (restoring) return <RestoreFromBackup onCancel={() => setRestoring(false)} />
  return (
    <>
      <h1 class="welcome-title">Create the first administrator</h1>
      <p class="welcome-text">
        This server has no users yet. The account you create now can manage everything, including the other users.
      </p>
      <Form
        submitLabel="Create administrator"
        errorFields={{ HOSTD_USERS_WEAK_PASSWORD: 'password', HOSTD_USERS_USERNAME_TAKEN: 'username' }}
        onSubmit={async (v) => {
          if (v.password !== v.confirm) throw new FieldErrors({ confirm: 'The two passwords differ' })
          await completeSetup(String(v.username), String(v.password))
        }}
      >
        <TextField
          name="username"
          label="User name"
          required
          maxLength={64}
          pattern="[A-Za-z0-9][A-Za-z0-9._@\-]*"
          autoComplete="username"
          autoFocus
          defaultValue="admin"
          hint="Letters, digits and . _ @ -"
        />
        <TextField
          name="password"
          label="Password"
          type="password"
          required
          minLength={8}
          autoComplete="new-password"
          hint={PASSWORD_HINT}
        />
        <TextField name="confirm" label="Repeat the password" type="password" required autoComplete="new-password" />
      </Form>
      {restoreOffered && (
        <p class="welcome-text">
          Moving to new hardware, or starting over after a failure?{' '}
          <Button variant="ghost" onClick={() => setRestoring(true)}>
            Restore from a backup
          </Button>
        </p>
      )}
    </>
  )
}

interface SetupSnapshot {
  id: string
  shortId: string
  time: string
  hostname: string
}

/** The repository and password from a recovery kit file (its `Repository:` and `Password:` lines). */
function readKit(text: string): { repository: string; password: string } | null {
  const line = (name: string) => new RegExp(`^${name}:[ \\t]*(.+?)[ \\t]*$`, 'm').exec(text)?.[1] ?? ''
  const repository = line('Repository')
  const password = line('Password')
  return repository && password ? { repository, password } : null
}

/**
 * hostd restored from a backup (the backups plugin's recovery kit): the repository and its password, the snapshots of
 * hostd it holds, one restored; the daemon then restarts on the restored data, and the page reloads into sign-in.
 */
function RestoreFromBackup({ onCancel }: { onCancel: () => void }) {
  const [repo, setRepo] = useState({ repository: '', password: '' })
  const [kitError, setKitError] = useState<string | null>(null)
  const [snapshots, setSnapshots] = useState<SetupSnapshot[] | null>(null)
  const [restarting, setRestarting] = useState(false)

  useEffect(() => {
    if (!restarting) return
    // The daemon closes, swaps the data folder in, and comes back: poll until it answers with the restored users.
    let stopped = false
    const poll = async () => {
      while (!stopped) {
        await new Promise((r) => setTimeout(r, 1000))
        try {
          const setup = await publicApi.get<{ needsSetup: boolean }>('/api/setup')
          if (!setup.needsSetup) {
            location.assign('/')
            return
          }
        } catch {
          // Still restarting.
        }
      }
    }
    void poll()
    return () => {
      stopped = true
    }
  }, [restarting])

  if (restarting)
    return (
      <>
        <h1 class="welcome-title">Restoring hostd</h1>
        <p class="welcome-text" role="status">
          The backup is restored. hostd is restarting on it; this page then shows the sign-in, where the accounts of the
          backup sign in.
        </p>
      </>
    )

  const onKit = async (event: Event) => {
    const file = (event.currentTarget as HTMLInputElement).files?.[0]
    if (!file) return
    const kit = readKit(await file.text())
    setKitError(kit ? null : 'This file is not a hostd recovery kit (no Repository and Password lines)')
    if (kit) setRepo(kit)
  }

  return (
    <>
      <h1 class="welcome-title">Restore from a backup</h1>
      <p class="welcome-text">
        hostd's own state (users, API tokens, two-factor, settings, skills, plugins) comes back from a backup made by
        its backups plugin. Give the repository and its password, or the recovery kit file saved when the repository was
        made.
      </p>
      <Form
        label="Backup repository"
        submitLabel="Find backups"
        errorFields={{ HOSTD_BACKUPS_WRONG_PASSWORD: 'password', HOSTD_BACKUPS_INVALID: 'repository' }}
        actions={
          <Button variant="ghost" onClick={onCancel}>
            Back
          </Button>
        }
        onSubmit={async (v) => {
          const body = { repository: String(v.repository).trim(), password: String(v.password) }
          setRepo(body)
          setSnapshots(null)
          const answer = await publicApi.post<{ items: SetupSnapshot[] }>('/api/setup/restore/snapshots', body)
          setSnapshots(answer.items)
        }}
      >
        <TextField
          name="kit"
          label="Recovery kit (optional)"
          type="file"
          accept=".txt,text/plain"
          onChange={(e) => void onKit(e)}
          hint={kitError ?? 'The text file the backups page offered to download: it fills in the two fields below.'}
        />
        <TextField
          name="repository"
          label="Repository"
          required
          value={repo.repository}
          onInput={(e) => setRepo({ ...repo, repository: (e.currentTarget as HTMLInputElement).value })}
          hint="A folder (/mnt/usb/backups), rest:https://user:password@host/path or sftp:user@host:/path"
        />
        <TextField
          name="password"
          label="Repository password"
          type="password"
          required
          autoComplete="off"
          value={repo.password}
          onInput={(e) => setRepo({ ...repo, password: (e.currentTarget as HTMLInputElement).value })}
        />
      </Form>
      {snapshots?.length === 0 && (
        <p class="welcome-text" role="status">
          This repository holds no backup of hostd.
        </p>
      )}
      {snapshots && snapshots.length > 0 && (
        <Form
          label="Restore"
          submitLabel="Restore this backup"
          onSubmit={async (v) => {
            await publicApi.post('/api/setup/restore', { ...repo, snapshot: String(v.snapshot) })
            setRestarting(true)
          }}
        >
          <Select
            name="snapshot"
            label="Backup to restore"
            hint={`${snapshots.length} backup${snapshots.length === 1 ? '' : 's'} of hostd, newest first`}
            options={snapshots.map((s) => ({
              value: s.id,
              label: `${new Date(s.time).toLocaleString()} · ${s.hostname} · ${s.shortId}`,
            }))}
          />
        </Form>
      )}
    </>
  )
}
