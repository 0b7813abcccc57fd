/** The "Network shares" view: SMB shares mounted from other machines, and folders of this one shared over SMB. */
import { useState } from 'preact/hooks'
import {
  Async,
  Badge,
  Button,
  Card,
  Checkbox,
  DataTable,
  Dialog,
  Empty,
  Form,
  Select,
  TextField,
  useResource,
  type FormValues,
  type PageContext,
} from '@hostd/ui'
import type { Exports, FileRoot, HelperState, NetworkShare, Overview, SmbExport } from './model.ts'

interface Props {
  ctx: PageContext
  overview: Overview
  helper: HelperState
  reload: () => void
}

export function SharesView({ ctx, overview, helper, reload }: Props) {
  const exports = useResource((signal) => ctx.api.get<Exports>('/api/storage/exports', { signal }), [])
  const [dialog, setDialog] = useState<'mount' | 'share' | null>(null)
  const close = () => setDialog(null)
  const admin = ctx.can('admin')

  const unmount = async (share: NetworkShare) => {
    const ok = await ctx.confirm({
      title: `Unmount ${share.name}?`,
      message:
        `//${share.server}/${share.share} is disconnected from ${share.mountpoint} and its saved credentials are ` +
        'deleted. Files on the server are not touched.',
      confirmLabel: 'Unmount',
      danger: true,
    })
    if (!ok) return
    try {
      await ctx.api.post('/api/storage/unmount', { name: share.name })
      ctx.toast.success(`${share.name} was unmounted`)
      reload()
    } catch (err) {
      if (!helper.report(err)) ctx.toast.error(err)
    }
  }

  const stopSharing = async (e: SmbExport) => {
    const ok = await ctx.confirm({
      title: `Stop sharing ${e.name}?`,
      message: `${e.path} is no longer shared over SMB; computers that have it open lose it. The folder and its files stay.`,
      confirmLabel: 'Stop sharing',
      danger: true,
    })
    if (!ok) return
    try {
      await ctx.api.post('/api/storage/exports/remove', { name: e.name })
      ctx.toast.success(`${e.name} is no longer shared`)
      exports.reload()
    } catch (err) {
      if (!helper.report(err)) ctx.toast.error(err)
    }
  }

  return (
    <div class="storage-stack">
      <Card
        title="Mounted network shares"
        actions={
          admin && (
            <Button icon="plus" disabled={helper.missing} onClick={() => setDialog('mount')}>
              Mount a share
            </Button>
          )
        }
      >
        <DataTable
          caption="Mounted network shares"
          hideCaption
          rows={overview.shares}
          rowKey={(s) => s.name}
          initialSort={{ key: 'name', direction: 'ascending' }}
          empty={
            <Empty icon="cloud" title="No network shares mounted">
              Shares from a NAS or another computer (SMB) appear here once mounted.
            </Empty>
          }
          columns={[
            { key: 'name', label: 'Name', sortable: true, render: (s) => <span class="cell-strong">{s.name}</span> },
            {
              key: 'source',
              label: 'Source',
              sortValue: (s) => `//${s.server}/${s.share}`,
              render: (s) => <span class="mono">{`//${s.server}/${s.share}`}</span>,
            },
            {
              key: 'username',
              label: 'Signed in as',
              secondary: true,
              render: (s) =>
                s.username ? `${s.domain ? `${s.domain}\\` : ''}${s.username}` : <span class="muted">guest</span>,
            },
            { key: 'readOnly', label: 'Access', render: (s) => (s.readOnly ? 'Read-only' : 'Read and write') },
            {
              key: 'mountpoint',
              label: 'Mounted at',
              secondary: true,
              render: (s) => <span class="mono detail">{s.mountpoint}</span>,
            },
            {
              key: 'mounted',
              label: 'State',
              sortable: true,
              render: (s) =>
                s.mounted ? <Badge tone="success">Mounted</Badge> : <Badge tone="warning">Not mounted</Badge>,
            },
            ...(admin
              ? [
                  {
                    key: 'actions',
                    label: 'Actions',
                    align: 'end' as const,
                    render: (s: NetworkShare) => (
                      <Button
                        size="sm"
                        variant="ghost"
                        icon="x"
                        aria-label={`Unmount ${s.name}`}
                        disabled={helper.missing}
                        onClick={() => void unmount(s)}
                      >
                        Unmount
                      </Button>
                    ),
                  },
                ]
              : []),
          ]}
        />
      </Card>

      <Card
        title="Folders shared over SMB"
        actions={
          admin && (
            <Button icon="plus" disabled={helper.missing} onClick={() => setDialog('share')}>
              Share a folder
            </Button>
          )
        }
      >
        <Async resource={exports} label="Loading shared folders…">
          {({ exports: list }) => (
            <DataTable
              caption="Folders shared over SMB"
              hideCaption
              rows={list}
              rowKey={(e) => e.name}
              initialSort={{ key: 'name', direction: 'ascending' }}
              empty={
                <Empty icon="folder" title="No folders are shared">
                  Share a folder to reach it from other computers as{' '}
                  <span class="mono">\\{location.hostname}\name</span>.
                </Empty>
              }
              columns={[
                {
                  key: 'name',
                  label: 'Share name',
                  sortable: true,
                  render: (e) => (
                    <span>
                      <span class="cell-strong">{e.name}</span>
                      {e.comment && <span class="storage-sub">{e.comment}</span>}
                    </span>
                  ),
                },
                { key: 'path', label: 'Folder', sortable: true, render: (e) => <span class="mono">{e.path}</span> },
                {
                  key: 'readOnly',
                  label: 'Access',
                  sortable: true,
                  render: (e) => (e.readOnly ? 'Read-only' : 'Read and write'),
                },
                {
                  key: 'guestAccess',
                  label: 'Guests',
                  sortable: true,
                  render: (e) =>
                    e.guestAccess ? <Badge tone="warning">Allowed</Badge> : <Badge>Signed-in users only</Badge>,
                },
                ...(admin
                  ? [
                      {
                        key: 'actions',
                        label: 'Actions',
                        align: 'end' as const,
                        render: (e: SmbExport) => (
                          <Button
                            size="sm"
                            variant="ghost"
                            icon="x"
                            aria-label={`Stop sharing ${e.name}`}
                            disabled={helper.missing}
                            onClick={() => void stopSharing(e)}
                          >
                            Stop sharing
                          </Button>
                        ),
                      },
                    ]
                  : []),
              ]}
            />
          )}
        </Async>
      </Card>

      {dialog === 'mount' && (
        <MountDialog
          ctx={ctx}
          helper={helper}
          onClose={close}
          onDone={() => {
            close()
            reload()
          }}
        />
      )}
      {dialog === 'share' && (
        <ShareFolderDialog
          ctx={ctx}
          roots={overview.roots}
          helper={helper}
          onClose={close}
          onDone={() => {
            close()
            exports.reload()
          }}
        />
      )}
    </div>
  )
}

const str = (v: FormValues[string] | undefined) => (typeof v === 'string' ? v.trim() : '')

/** Mount an SMB share: by its smb:// address or by server and share name, with optional credentials. */
function MountDialog({
  ctx,
  helper,
  onClose,
  onDone,
}: {
  ctx: PageContext
  helper: HelperState
  onClose: () => void
  onDone: () => void
}) {
  const [by, setBy] = useState<'url' | 'parts'>('url')
  const submit = async (v: FormValues) => {
    const body: Record<string, unknown> = { name: str(v.name), readOnly: v.readOnly === true }
    if (by === 'url') body.url = str(v.url)
    else Object.assign(body, { server: str(v.server), share: str(v.share) })
    for (const k of ['username', 'domain'] as const) if (str(v[k])) body[k] = str(v[k])
    if (typeof v.password === 'string' && v.password !== '') body.password = v.password
    try {
      await ctx.api.post('/api/storage/mount', body)
    } catch (err) {
      helper.report(err)
      throw err
    }
    ctx.toast.success(`${String(body.name)} is mounted`)
    onDone()
  }
  return (
    <Dialog open title="Mount a network share" onClose={onClose}>
      <Form
        submitLabel="Mount"
        actions={<Button onClick={onClose}>Cancel</Button>}
        errorFields={{ HOSTD_STORAGE_SHARE_EXISTS: 'name' }}
        onSubmit={submit}
      >
        <Select
          name="by"
          label="Give the share as"
          value={by}
          onChange={(e) => setBy(e.currentTarget.value as 'url' | 'parts')}
          options={[
            { value: 'url', label: 'An SMB address (smb://server/share)' },
            { value: 'parts', label: 'A server and a share name' },
          ]}
        />
        {by === 'url' ? (
          <TextField
            name="url"
            label="SMB address"
            required
            placeholder="smb://nas.local/media"
            pattern="smb://[^/]+/.+"
            autoComplete="off"
            hint="smb:// then the server's name or address, then the share"
          />
        ) : (
          <>
            <TextField
              name="server"
              label="Server"
              required
              placeholder="nas.local"
              pattern="[A-Za-z0-9]([A-Za-z0-9.\-]*[A-Za-z0-9])?"
              maxLength={253}
              autoComplete="off"
              hint="Host name or IPv4 address"
            />
            <TextField
              name="share"
              label="Share"
              required
              placeholder="media"
              pattern="[A-Za-z0-9][A-Za-z0-9 ._\-]{0,79}"
              autoComplete="off"
            />
          </>
        )}
        <TextField
          name="name"
          label="Name on this server"
          required
          pattern="[a-z0-9][a-z0-9_\-]{0,63}"
          autoComplete="off"
          hint="The folder it is mounted as: lowercase letters, digits, - and _"
        />
        <TextField
          name="username"
          label="User name (optional)"
          pattern="[A-Za-z0-9][A-Za-z0-9._@\-]{0,63}"
          autoComplete="off"
          hint="Leave empty to connect as a guest"
        />
        <TextField
          name="password"
          label="Password (optional)"
          type="password"
          autoComplete="new-password"
          maxLength={256}
          hint="Kept in a root-only file on this server; never shown again"
        />
        <TextField
          name="domain"
          label="Domain (optional)"
          pattern="[A-Za-z0-9][A-Za-z0-9.\-]{0,63}"
          autoComplete="off"
        />
        <Checkbox name="readOnly" label="Read-only" />
      </Form>
    </Dialog>
  )
}

export interface ShareFolderDialogProps {
  ctx: PageContext
  roots: FileRoot[]
  helper: HelperState
  /** Prefilled folder (from the file browser). */
  initial?: { root: string; folder: string }
  onClose: () => void
  onDone: (created: SmbExport) => void
}

/** Share a folder inside one of the file roots over SMB. */
export function ShareFolderDialog({ ctx, roots, helper, initial, onClose, onDone }: ShareFolderDialogProps) {
  const submit = async (v: FormValues) => {
    const root = roots.find((r) => r.name === (str(v.root) || initial?.root)) ?? roots[0]!
    const folder = str(v.folder).replace(/^\/+|\/+$/g, '')
    const body: Record<string, unknown> = {
      name: str(v.name),
      path: folder ? `${root.path}/${folder}` : root.path,
      readOnly: v.readOnly === true,
      guestAccess: v.guestAccess === true,
    }
    if (str(v.comment)) body.comment = str(v.comment)
    let created: SmbExport
    try {
      created = await ctx.api.post<SmbExport>('/api/storage/exports', body)
    } catch (err) {
      helper.report(err)
      throw err
    }
    ctx.toast.success(`${created.name} is shared over SMB`)
    onDone(created)
  }
  const suggested =
    initial?.folder
      .split('/')
      .filter(Boolean)
      .pop()
      ?.replace(/[^A-Za-z0-9 _.-]/g, '') ?? ''
  return (
    <Dialog open title="Share a folder over SMB" onClose={onClose}>
      {roots.length === 0 ? (
        <Empty icon="folder" title="No file roots">
          Folders can be shared only inside the file roots (HOSTD_FILE_ROOTS).
        </Empty>
      ) : (
        <Form
          submitLabel="Share folder"
          actions={<Button onClick={onClose}>Cancel</Button>}
          errorFields={{
            HOSTD_STORAGE_SHARE_EXISTS: 'name',
            HOSTD_STORAGE_EXPORT_OUTSIDE_ROOTS: 'folder',
            HOSTD_STORAGE_NOT_FOUND: 'folder',
            HOSTD_STORAGE_PATH_FORBIDDEN: 'folder',
          }}
          onSubmit={submit}
        >
          {roots.length > 1 && (
            <Select
              name="root"
              label="File root"
              options={roots.map((r) => ({ value: r.name, label: `${r.name} (${r.path})` }))}
              defaultValue={initial?.root}
            />
          )}
          <TextField
            name="folder"
            label={`Folder inside ${roots.length > 1 ? 'the root' : roots[0]!.path}`}
            defaultValue={initial?.folder ?? ''}
            autoComplete="off"
            hint="A path such as media/photos; empty shares the whole root"
          />
          <TextField
            name="name"
            label="Share name"
            required
            defaultValue={suggested}
            pattern="[A-Za-z0-9][A-Za-z0-9 _.\-]{0,79}"
            autoComplete="off"
            hint={`Other computers open it as \\\\${location.hostname}\\<name>`}
          />
          <TextField
            name="comment"
            label="Description (optional)"
            pattern="[A-Za-z0-9][A-Za-z0-9 _.,:/@+\-]{0,119}"
            autoComplete="off"
          />
          <Checkbox
            name="readOnly"
            label="Read-only"
            defaultChecked
            hint="Others can open and copy files but not change them"
          />
          <Checkbox
            name="guestAccess"
            label="Allow guests"
            hint="Anyone on the network can connect without an account"
          />
        </Form>
      )}
    </Dialog>
  )
}
