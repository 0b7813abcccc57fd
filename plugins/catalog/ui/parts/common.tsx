/** Pieces several catalog views share: the app's monogram, its state badges, and the uninstall dialog. */
import { useState } from 'preact/hooks'
import { Badge, Button, Checkbox, Dialog, Icon, errorMessage, type PageContext } from '@hostd/ui'
import { hueOf, isRunning, stateTone, webUrl, type CatalogApp, type Install } from './model.ts'

/**
 * "Open": the app's web interface in a new tab, at its published port on this server's address as the browser knows
 * it. Nothing when the app has no web interface or is not running (its state says so).
 */
export function OpenLink({ app, install, size = 'md' }: { app: CatalogApp; install: Install; size?: 'sm' | 'md' }) {
  const url = webUrl(install)
  if (!url) return null
  return (
    <a
      class={`btn btn-primary btn-${size}`}
      href={url}
      target="_blank"
      rel="noopener noreferrer"
      aria-label={`Open ${install.name === app.id ? app.title : `${app.title} (${install.name})`}`}
    >
      <Icon name="external-link" size={16} /> <span>Open</span>
    </a>
  )
}

/** Starts or stops an install: its container, or the stack an app that is a stack runs as. */
export function PowerButton({
  ctx,
  install,
  onChanged,
  size = 'md',
}: {
  ctx: PageContext
  install: Install
  onChanged: () => void
  size?: 'sm' | 'md'
}) {
  const [busy, setBusy] = useState(false)
  const action = isRunning(install) ? 'stop' : 'start'
  const run = async () => {
    setBusy(true)
    try {
      const path = install.stack
        ? `/api/stacks/${encodeURIComponent(install.stack)}/${action}`
        : `/api/containers/${encodeURIComponent(install.containerId)}/${action}`
      await ctx.api.post(path)
      ctx.toast.success(`${install.name} ${action === 'stop' ? 'stopped' : 'started'}`)
      onChanged()
    } catch (err) {
      ctx.toast.error(err)
    } finally {
      setBusy(false)
    }
  }
  return (
    <Button
      size={size}
      variant="secondary"
      icon={action === 'stop' ? 'square' : 'play'}
      busy={busy}
      aria-label={`${action === 'stop' ? 'Stop' : 'Start'} ${install.name}`}
      onClick={() => void run()}
    >
      {action === 'stop' ? 'Stop' : 'Start'}
    </Button>
  )
}

/** An install's engine state as a badge ("running", "exited"...). */
export function StateBadge({ install }: { install: Install }) {
  return <Badge tone={stateTone(install.state)}>{install.state}</Badge>
}

/**
 * The app's mark: the first letter of its title on a colour of its own. Catalog icons are https URLs on other
 * sites, which the page's Content-Security-Policy does not load (images from this server only).
 */
export function AppIcon({ app, size = 'md' }: { app: Pick<CatalogApp, 'id' | 'title'>; size?: 'md' | 'lg' }) {
  return (
    <span class={`app-icon app-icon-${size}`} style={{ '--app-hue': String(hueOf(app.id)) }} aria-hidden="true">
      {app.title.trim().slice(0, 1).toUpperCase()}
    </span>
  )
}

/** An app's categories, then its installed / update / admin badges. */
export function AppTags({ app }: { app: CatalogApp }) {
  return (
    <p class="app-card-tags">
      {app.categories.map((c) => (
        <Badge key={c} tone="accent">
          {c}
        </Badge>
      ))}
      {app.installed && (
        <Badge tone="success">
          <Icon name="circle-check" size={12} /> Installed{app.installs.length > 1 ? ` ×${app.installs.length}` : ''}
        </Badge>
      )}
      {app.updateAvailable && (
        <Badge tone="warning">
          <Icon name="arrow-up" size={12} /> Update available
        </Badge>
      )}
      {app.needsAdmin && (
        <Badge>
          <Icon name="shield" size={12} /> Needs admin
        </Badge>
      )}
    </p>
  )
}

/** What is new for an install: the catalog's version, a new image, or nothing. */
export function UpdateBadge({ app, install }: { app: CatalogApp; install: Install }) {
  if (install.versionUpdate) return <Badge tone="warning">Version {app.version} available</Badge>
  if (install.imageUpdate) return <Badge tone="warning">New image available</Badge>
  return <Badge tone="success">Up to date</Badge>
}

interface UninstallResult {
  name: string
  removedVolumes: string[]
  keptVolumes: { name: string; reason: string }[]
}

/** Asks before removing an installed app's container, with a choice to remove its volumes too. */
export function UninstallDialog({
  ctx,
  app,
  install,
  onClose,
  onDone,
}: {
  ctx: PageContext
  app: CatalogApp
  install: Install
  onClose: () => void
  onDone: () => void
}) {
  const [removeVolumes, setRemoveVolumes] = useState(false)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const uninstall = async () => {
    setBusy(true)
    setError(null)
    try {
      const result = await ctx.api.post<UninstallResult>('/api/catalog/uninstall', {
        container: install.containerId,
        removeVolumes,
      })
      const removed = result.removedVolumes.length
        ? ` and ${result.removedVolumes.length} volume${result.removedVolumes.length > 1 ? 's' : ''}`
        : ''
      ctx.toast.success(`${result.name} was uninstalled${removed}`)
      for (const kept of result.keptVolumes) ctx.toast.info(`Volume ${kept.name} was kept: ${kept.reason}`)
      onDone()
    } catch (err) {
      setError(errorMessage(err))
      setBusy(false)
    }
  }
  return (
    <Dialog
      open
      size="sm"
      title={`Uninstall ${install.name}?`}
      onClose={() => !busy && onClose()}
      actions={
        <>
          <Button onClick={onClose} disabled={busy}>
            Cancel
          </Button>
          <Button variant="danger" icon="trash" busy={busy} onClick={() => void uninstall()}>
            Uninstall
          </Button>
        </>
      }
    >
      <p class="dialog-text">
        The container <strong>{install.name}</strong> ({app.title}) is stopped and removed. Folders of this server it
        used are never touched.
      </p>
      <Checkbox
        name="removeVolumes"
        label="Also remove its volumes"
        hint="Its named volumes hold the app's data: they are deleted for good. A volume another container uses is kept."
        checked={removeVolumes}
        onChange={(e) => setRemoveVolumes(e.currentTarget.checked)}
      />
      {error && (
        <p class="form-error" role="alert">
          <Icon name="circle-alert" /> {error}
        </p>
      )}
    </Dialog>
  )
}
