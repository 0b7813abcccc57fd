/**
 * The catalog page (/catalog). Its views have their own URLs under the page's base:
 *   /catalog[?q=&category=]               the apps, searchable and filtered by category
 *   /catalog/installed                    apps installed from the catalog (found by their labels)
 *   /catalog/sources                      catalog sources (admins add, refresh and remove them)
 *   /catalog/apps/<source>/<id>           one app
 *   /catalog/apps/<source>/<id>/install   its install form, then live progress
 * One GET /api/catalog feeds every view; it is read again after each change.
 */
import {
  Async,
  Empty,
  Icon,
  PageHeader,
  Tabs,
  adoptStyles,
  defineElement,
  useResource,
  type PageContext,
} from '@hostd/ui'
import css from './catalog.css' with { type: 'text' }
import { Browse } from './parts/browse.tsx'
import { AppDetail, InstallsTable } from './parts/detail.tsx'
import { InstallView } from './parts/install.tsx'
import { installsOf, type Catalog } from './parts/model.ts'
import { Sources } from './parts/sources.tsx'

const TABS = [
  { id: '', label: 'Apps' },
  { id: 'installed', label: 'Installed' },
  { id: 'sources', label: 'Sources' },
]

function EngineNotice({ catalog }: { catalog: Catalog }) {
  // With an engine, the message says its version, or why the installed apps could not be read (the API's words).
  const unlisted = catalog.engine.available && catalog.engine.message.startsWith('Installed apps could not be read')
  if (catalog.engine.available && !unlisted) return null
  return (
    <p class="notice">
      <Icon name="triangle-alert" />{' '}
      <span>
        {unlisted
          ? catalog.engine.message
          : `The container engine is not reachable, so nothing can be installed: ${catalog.engine.message}`}
      </span>
    </p>
  )
}

function Overview({
  ctx,
  catalog,
  tab,
  reload,
}: {
  ctx: PageContext
  catalog: Catalog
  tab: string
  reload: () => void
}) {
  const installs = installsOf(catalog.apps)
  const labels = TABS.map((t) => ({
    ...t,
    label:
      t.id === 'installed'
        ? `${t.label} (${installs.length})`
        : t.id === ''
          ? `${t.label} (${catalog.apps.length})`
          : t.label,
  }))
  return (
    <>
      <PageHeader
        title="App catalog"
        description="Apps that run in one container. Install one with a few settings; apps that reach the host need an admin."
      />
      <div class="stack">
        <EngineNotice catalog={catalog} />
        <Tabs
          label="Catalog views"
          tabs={labels}
          selected={tab}
          onSelect={(id) => ctx.navigate(id ? `${ctx.base}/${id}` : ctx.base)}
        >
          {tab === 'installed' ? (
            installs.length ? (
              <InstallsTable ctx={ctx} rows={installs} sources={catalog.sources} onChanged={reload} showApp />
            ) : (
              <Empty icon="package" title="No app from the catalog is installed">
                Apps installed here are recognised by the labels the catalog puts on their containers.
              </Empty>
            )
          ) : tab === 'sources' ? (
            <Sources ctx={ctx} sources={catalog.sources} onChanged={reload} />
          ) : (
            <Browse ctx={ctx} catalog={catalog} />
          )}
        </Tabs>
      </div>
    </>
  )
}

function CatalogPage({ ctx }: { ctx: PageContext }) {
  const catalog = useResource((signal) => ctx.api.get<Catalog>('/api/catalog', { signal }), [])
  const parts = ctx.location.value.path.slice(ctx.base.length).split('/').filter(Boolean).map(decodeURIComponent)
  return (
    <Async resource={catalog} label="Loading the catalog…">
      {(data) => {
        if (parts[0] === 'apps') {
          const app = data.apps.find((a) => a.source === parts[1] && a.id === parts[2])
          if (!app || parts.length > 4 || (parts[3] && parts[3] !== 'install')) {
            return (
              <>
                <PageHeader title="App not found" />
                <Empty
                  icon="search"
                  title="No such app in the catalog"
                  action={
                    <a class="btn btn-secondary btn-md" href={ctx.base}>
                      All apps
                    </a>
                  }
                >
                  It may have left its source, or the source was removed.
                </Empty>
              </>
            )
          }
          return parts[3] === 'install' ? (
            <InstallView ctx={ctx} catalog={data} app={app} onInstalled={catalog.reload} />
          ) : (
            <AppDetail ctx={ctx} catalog={data} app={app} onChanged={catalog.reload} />
          )
        }
        const tab = TABS.some((t) => t.id === (parts[0] ?? '')) ? (parts[0] ?? '') : ''
        return <Overview ctx={ctx} catalog={data} tab={tab} reload={catalog.reload} />
      }}
    </Async>
  )
}

adoptStyles('catalog', css)
defineElement('catalog-page', CatalogPage)
