/**
 * The catalog's overview card: the apps installed here, each with its state and an Open link to its web interface,
 * the ones not running first (the overview answers "is my server fine?"). With none, a way to the catalog.
 */
import { Async, Icon, adoptStyles, defineElement, useResource, type PageContext } from '@hostd/ui'
import css from './catalog.css' with { type: 'text' }
import { AppIcon, OpenLink, StateBadge } from './parts/common.tsx'
import { appPath, installsOf, isRunning, type Catalog } from './parts/model.ts'

const SHOWN = 6
const BASE = '/catalog'

function AppsCard({ ctx }: { ctx: PageContext }) {
  const catalog = useResource((signal) => ctx.api.get<Catalog>('/api/catalog', { signal }), [], { every: 30_000 })
  return (
    <Async resource={catalog} label="Reading the installed apps…">
      {(data) => {
        const installs = installsOf(data.apps).sort(
          (a, b) =>
            Number(isRunning(a.install)) - Number(isRunning(b.install)) || a.app.title.localeCompare(b.app.title),
        )
        if (!installs.length) {
          return (
            <p class="apps-card-foot">
              No app is installed yet. <a href={BASE}>Browse the app catalog</a> ({data.apps.length} apps).
            </p>
          )
        }
        const down = installs.filter((i) => !isRunning(i.install)).length
        return (
          <>
            <ul class="apps-card-list" aria-label="Installed apps">
              {installs.slice(0, SHOWN).map(({ app, install }) => (
                <li key={install.containerId || install.name} class="apps-card-item">
                  <AppIcon app={app} />
                  <a class="apps-card-name" href={appPath(BASE, app)}>
                    {install.name === app.id ? app.title : `${app.title} (${install.name})`}
                  </a>
                  <StateBadge install={install} />
                  <OpenLink app={app} install={install} size="sm" />
                </li>
              ))}
            </ul>
            <p class="apps-card-foot">
              {down > 0 && (
                <>
                  <Icon name="triangle-alert" size={14} /> {down} not running ·{' '}
                </>
              )}
              <a href={`${BASE}/installed`}>
                {installs.length > SHOWN ? `All ${installs.length} installed apps` : 'Installed apps'}
              </a>
            </p>
          </>
        )
      }}
    </Async>
  )
}

adoptStyles('catalog', css)
defineElement('catalog-apps', AppsCard)
