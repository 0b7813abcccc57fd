/** One app: what it is, what it needs, its installs here, and the way to install it (role permitting). */
import { useState } from 'preact/hooks'
import { Button, Card, DataTable, Icon, KeyValues, PageHeader, type PageContext } from '@hostd/ui'
import { AppIcon, AppTags, OpenLink, PowerButton, StateBadge, UninstallDialog, UpdateBadge } from './common.tsx'
import {
  adminReason,
  appPath,
  containerPath,
  sourceName,
  type Catalog,
  type CatalogApp,
  type Install,
  type SourceStatus,
} from './model.ts'

/** Whether this user may start an install of this app, and if not, why (`detailed`: with the engine's own words). */
export function installBlock(ctx: PageContext, catalog: Catalog, app: CatalogApp, detailed = false): string | null {
  if (!ctx.can('operator')) return 'Installing needs the operator role.'
  const reason = adminReason(app)
  if (reason && !ctx.can('admin')) return `Needs an admin: it ${reason}.`
  if (!catalog.engine.available)
    return `The container engine is not reachable: ${detailed ? catalog.engine.message : 'the catalog page says why.'}`
  return null
}

function Needs({ app }: { app: CatalogApp }) {
  const reason = adminReason(app)
  const ports = app.fields.filter((f) => f.type === 'port').map((f) => f.label)
  const items: [string, string][] = []
  if (reason) items.push(['shield', `Needs an admin: it ${reason}.`])
  else items.push(['users', 'An operator may install it.'])
  if (ports.length) items.push(['network', `A free port on this server (${ports.join(', ')}).`])
  items.push([
    'package',
    app.kind === 'stack' ? 'Runs as a stack of several containers (the Stacks page).' : `Runs the image ${app.image}.`,
  ])
  if (app.architectures.length) items.push(['cpu', `Built for ${app.architectures.join(', ')}.`])
  return (
    <ul class="needs-list">
      {items.map(([icon, text]) => (
        <li key={text}>
          <Icon name={icon} size={16} /> {text}
        </li>
      ))}
    </ul>
  )
}

export function InstallsTable({
  ctx,
  rows,
  sources,
  onChanged,
  showApp,
}: {
  ctx: PageContext
  rows: { app: CatalogApp; install: Install }[]
  sources: SourceStatus[]
  onChanged: () => void
  showApp?: boolean
}) {
  const [removing, setRemoving] = useState<{ app: CatalogApp; install: Install } | null>(null)
  const operator = ctx.can('operator')
  return (
    <>
      <DataTable
        caption={showApp ? 'Apps installed from the catalog' : 'Installed here'}
        hideCaption
        rows={rows}
        rowKey={(r) => r.install.containerId}
        initialSort={showApp ? { key: 'app', direction: 'ascending' } : undefined}
        columns={[
          // The installed view names the app (its container under it) and keeps to six columns, so a laptop's width
          // holds the row; an app's own page lists its containers.
          ...(showApp
            ? [
                {
                  key: 'app',
                  label: 'App',
                  primary: true,
                  sortValue: (r: { app: CatalogApp }) => r.app.title,
                  render: (r: { app: CatalogApp; install: Install }) => (
                    <span class="cell-strong">
                      <AppIcon app={r.app} />
                      <span>
                        <a href={appPath(ctx.base, r.app)}>{r.app.title}</a>
                        <span class="detail installed-container">
                          <a class="mono" href={containerPath(r.install.containerId)}>
                            {r.install.name}
                          </a>
                        </span>
                      </span>
                    </span>
                  ),
                },
              ]
            : [
                {
                  key: 'name',
                  label: 'Container',
                  primary: true,
                  sortValue: (r: { install: Install }) => r.install.name,
                  render: (r: { install: Install }) => (
                    <a class="mono" href={containerPath(r.install.containerId)}>
                      {r.install.name}
                    </a>
                  ),
                },
              ]),
          {
            key: 'state',
            label: 'State',
            sortValue: (r) => r.install.state,
            render: (r) => <StateBadge install={r.install} />,
          },
          {
            key: 'open',
            label: 'Web',
            render: (r) =>
              r.install.web ? (
                <OpenLink app={r.app} install={r.install} size="sm" />
              ) : (
                <span class="muted">{r.app.port ? 'when running' : 'none'}</span>
              ),
          },
          ...(showApp
            ? [
                {
                  key: 'version',
                  label: 'Version',
                  render: (r: { app: CatalogApp; install: Install }) => (
                    <>
                      {r.install.version}
                      {r.install.updateAvailable && (
                        <div>
                          <UpdateBadge app={r.app} install={r.install} />
                        </div>
                      )}
                    </>
                  ),
                },
                {
                  key: 'source',
                  label: 'Source',
                  secondary: true,
                  render: (r: { app: CatalogApp }) => sourceName(sources, r.app.source),
                },
              ]
            : // On an app's own page (a narrow card) the header's tags say when an update is available.
              []),
          ...(ctx.can('operator')
            ? [
                {
                  key: 'actions',
                  label: 'Actions',
                  align: 'end' as const,
                  render: (r: { app: CatalogApp; install: Install }) => (
                    <div class="row-actions">
                      {operator && <PowerButton ctx={ctx} install={r.install} onChanged={onChanged} size="sm" />}
                      <button type="button" class="btn btn-ghost btn-sm" onClick={() => setRemoving(r)}>
                        <Icon name="trash" size={16} />{' '}
                        <span>
                          Uninstall<span class="sr-only"> {r.install.name}</span>
                        </span>
                      </button>
                    </div>
                  ),
                },
              ]
            : []),
        ]}
      />
      {removing && (
        <UninstallDialog
          ctx={ctx}
          app={removing.app}
          install={removing.install}
          onClose={() => setRemoving(null)}
          onDone={() => {
            setRemoving(null)
            onChanged()
          }}
        />
      )}
    </>
  )
}

export function AppDetail({
  ctx,
  catalog,
  app,
  onChanged,
}: {
  ctx: PageContext
  catalog: Catalog
  app: CatalogApp
  onChanged: () => void
}) {
  const blocked = installBlock(ctx, catalog, app)
  const [removing, setRemoving] = useState<Install | null>(null)
  const first = app.installs[0]
  // Installed: the page leads with the app as it runs here (state, Open, stop or start, uninstall), as Umbrel does;
  // installing another copy stays possible from the "Installed here" card.
  const installed = first && (
    <div class="install-action installed-controls">
      <StateBadge install={first} />
      <OpenLink app={app} install={first} />
      {ctx.can('operator') && (
        <>
          <PowerButton ctx={ctx} install={first} onChanged={onChanged} />
          <Button
            variant="ghost"
            icon="trash"
            aria-label={`Uninstall ${first.name}`}
            onClick={() => setRemoving(first)}
          >
            Uninstall
          </Button>
        </>
      )}
    </div>
  )
  const install = (
    <div class="install-action">
      {ctx.can('operator') &&
        (blocked ? (
          <Button variant="primary" icon="download" disabled aria-describedby="install-blocked">
            Install
          </Button>
        ) : (
          <a class="btn btn-primary btn-md" href={`${appPath(ctx.base, app)}/install`}>
            <Icon name="download" size={16} /> <span>Install</span>
          </a>
        ))}
      {blocked && (
        <p id="install-blocked" class="muted install-reason">
          {blocked}
        </p>
      )}
    </div>
  )
  return (
    <>
      <a class="back-link" href={ctx.base}>
        <Icon name="chevron-down" size={16} class="back-icon" /> All apps
      </a>
      <div class="app-hero">
        <AppIcon app={app} size="lg" />
        <div class="app-hero-text">
          <PageHeader title={app.title} description={app.tagline || undefined} actions={installed || install} />
          <AppTags app={app} />
        </div>
      </div>
      <div class="app-detail">
        <div class="stack">
          <Card title="About">
            <div class="stack">
              {app.description ? (
                <p class="app-description">{app.description}</p>
              ) : (
                <p class="muted">No description.</p>
              )}
              {app.note && (
                <p class="notice notice-info">
                  <Icon name="info" /> <span>{app.note}</span>
                </p>
              )}
              {app.defaultCredentials && (
                <p class="credentials">
                  <Icon name="key" />{' '}
                  <span>
                    It starts with the user <code>{app.defaultCredentials.username}</code> and the password{' '}
                    <code>{app.defaultCredentials.password}</code>: change them after the first sign-in.
                  </span>
                </p>
              )}
            </div>
          </Card>
          <Card title="What it needs">
            <Needs app={app} />
          </Card>
          <Card
            title={app.installs.length ? `Installed here (${app.installs.length})` : 'Installed here'}
            actions={
              first &&
              ctx.can('operator') &&
              !blocked && (
                <a class="btn btn-ghost btn-sm" href={`${appPath(ctx.base, app)}/install`}>
                  <Icon name="plus" size={16} /> <span>Install another</span>
                </a>
              )
            }
          >
            {app.installs.length ? (
              <InstallsTable
                ctx={ctx}
                rows={app.installs.map((i) => ({ app, install: i }))}
                sources={catalog.sources}
                onChanged={onChanged}
              />
            ) : (
              <p class="muted">Not installed on this server.</p>
            )}
          </Card>
        </div>
        <Card title="Details">
          <KeyValues
            items={[
              ['Version', app.version],
              ['Developer', app.developer ?? 'unknown'],
              [
                'Website',
                app.website ? (
                  <a href={app.website} target="_blank" rel="noopener noreferrer">
                    {app.website.replace(/^https:\/\//, '')}{' '}
                    <Icon name="external-link" size={14} label="(opens a new tab)" />
                  </a>
                ) : (
                  'none'
                ),
              ],
              ['Source', sourceName(catalog.sources, app.source)],
              app.kind === 'stack' ? ['Runs as', 'a stack (compose file)'] : ['Image', <code>{app.image}</code>],
              ['Web interface', app.port ? `container port ${app.port}${app.path ?? ''}` : 'none'],
            ]}
          />
        </Card>
      </div>
      {removing && (
        <UninstallDialog
          ctx={ctx}
          app={app}
          install={removing}
          onClose={() => setRemoving(null)}
          onDone={() => {
            setRemoving(null)
            onChanged()
          }}
        />
      )}
    </>
  )
}
