/** The catalog's app grid: search and a category filter (kept in the query string), one card per app. */
import { Button, Empty, Icon, type PageContext } from '@hostd/ui'
import { AppIcon, AppTags } from './common.tsx'
import { appPath, type Catalog, type CatalogApp } from './model.ts'

function matches(app: CatalogApp, words: string[], category: string): boolean {
  if (category && !app.categories.includes(category)) return false
  if (!words.length) return true
  const text =
    `${app.title} ${app.tagline} ${app.description} ${app.categories.join(' ')} ${app.developer ?? ''} ${app.id}`.toLowerCase()
  return words.every((w) => text.includes(w))
}

function AppCard({ ctx, app }: { ctx: PageContext; app: CatalogApp }) {
  return (
    <li class="app-card">
      <AppIcon app={app} />
      <div class="app-card-main">
        <h2 class="app-card-title">
          <a href={appPath(ctx.base, app)}>{app.title}</a>
        </h2>
        {app.tagline && <p class="app-card-tagline">{app.tagline}</p>}
        <AppTags app={app} />
      </div>
    </li>
  )
}

export function Browse({ ctx, catalog }: { ctx: PageContext; catalog: Catalog }) {
  const params = new URLSearchParams(ctx.location.value.search)
  const query = params.get('q') ?? ''
  const category = params.get('category') ?? ''
  const setFilter = (name: 'q' | 'category', value: string) => {
    const next = new URLSearchParams(ctx.location.value.search)
    if (value) next.set(name, value)
    else next.delete(name)
    const search = next.toString()
    ctx.navigate(`${ctx.base}${search ? `?${search}` : ''}`, { replace: true })
  }
  const words = query.toLowerCase().split(/\s+/).filter(Boolean)
  const shown = catalog.apps.filter((app) => matches(app, words, category))
  const summary =
    shown.length === catalog.apps.length
      ? `${catalog.apps.length} apps`
      : `${shown.length} of ${catalog.apps.length} apps`

  return (
    <div class="stack">
      <search class="catalog-filters" aria-label="Apps">
        <label class="catalog-search">
          <Icon name="search" size={16} />
          <span class="sr-only">Search apps</span>
          <input
            class="input"
            type="search"
            placeholder="Search apps"
            value={query}
            onInput={(e) => setFilter('q', e.currentTarget.value)}
          />
        </label>
        <label class="catalog-category">
          <span class="sr-only">Category</span>
          <select class="input select" value={category} onChange={(e) => setFilter('category', e.currentTarget.value)}>
            <option value="">All categories</option>
            {catalog.categories.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
        </label>
        <span class="toolbar-status" role="status">
          {summary}
        </span>
      </search>
      {catalog.apps.length === 0 ? (
        <Empty icon="store" title="The catalog is empty">
          {ctx.can('admin')
            ? 'Add a catalog source (a folder or an HTTPS URL) under Sources.'
            : 'An admin can add catalog sources.'}
        </Empty>
      ) : shown.length === 0 ? (
        <Empty
          icon="search"
          title="No app matches"
          action={
            <Button icon="x" onClick={() => ctx.navigate(ctx.base, { replace: true })}>
              Clear the filters
            </Button>
          }
        >
          Nothing {query ? `matches “${query}”` : ''}
          {query && category ? ' in ' : category ? 'in ' : ''}
          {category}.
        </Empty>
      ) : (
        <ul class="app-grid" aria-label="Apps">
          {shown.map((app) => (
            <AppCard key={`${app.source}/${app.id}`} ctx={ctx} app={app} />
          ))}
        </ul>
      )}
    </div>
  )
}
