import type { SessionUser } from '../kit/context.ts'
import { Empty, Loading } from '../kit/feedback.tsx'
import { Card, PageHeader } from '../kit/layout.tsx'
import { extensions, pluginCards } from '../shell/extensions.ts'
import { PluginElement } from '../shell/mount.tsx'
import { branding } from '../shell/session.ts'

/** The overview: the cards plugins contribute (ui.cards), in their order, each in a titled card frame. */
export default function OverviewPage({ user }: { user: SessionUser }) {
  const cards = pluginCards.value
  return (
    <>
      <PageHeader title="Overview" description={`${branding.value.serverName} at a glance.`} />
      {extensions.value === null ? (
        <Loading label="Loading the overview…" />
      ) : cards.length === 0 ? (
        <Empty icon="layout-dashboard" title="Nothing to show yet">
          Plugins add cards here: the metrics plugin its live charts, the system plugin the host's facts and updates.
        </Empty>
      ) : (
        <div class="card-grid">
          {cards.map((c) => (
            <Card key={`${c.plugin.id}:${c.element}`} title={c.title} class={`size-${c.size}`}>
              <PluginElement
                module={c.module}
                element={c.element}
                plugin={c.plugin}
                user={user}
                base="/"
                title={c.title}
              />
            </Card>
          ))}
        </div>
      )}
    </>
  )
}
