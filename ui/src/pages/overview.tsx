import type { SessionUser } from '../kit/context.ts'
import { Empty, Loading } from '../kit/feedback.tsx'
import { Card, PageHeader } from '../kit/layout.tsx'
import { extensions, pluginCards, type PluginCard } from '../shell/extensions.ts'
import { PluginElement } from '../shell/mount.tsx'
import { branding } from '../shell/session.ts'

/**
 * Where the shell puts the cards it knows, so the page answers "is my server fine?" first: storage, memory, what is
 * not running (containers, apps), updates waiting, alerts; then the charts and the host's facts; the software's
 * version and commit are not on the overview (the System page has them). Keyed by `<plugin>:<element>`, else by
 * plugin; a card not listed keeps its own `order` after the known ones.
 */
const CARD_PLACE: Record<string, number> = {
  storage: 10,
  'metrics:metrics-memory': 20,
  containers: 30,
  catalog: 32,
  stacks: 34,
  packages: 40,
  alerts: 45,
  backups: 48,
  'metrics:metrics-live': 50,
  metrics: 52,
  'system:system-host': 60,
  system: 62,
  widgets: 70,
  // The system plugin's "Updates" card (updates waiting, restart required; the version and commit moved to the System page).
  'system:system-software': 40,
}

export const cardPlace = (c: Pick<PluginCard, 'element' | 'order'> & { plugin: { id: string } }) =>
  CARD_PLACE[`${c.plugin.id}:${c.element}`] ?? CARD_PLACE[c.plugin.id] ?? 100 + c.order / 1000

/** The overview: the cards plugins contribute (ui.cards), in the shell's order, each in a titled card frame. */
export default function OverviewPage({ user }: { user: SessionUser }) {
  const cards = [...pluginCards.value].sort((a, b) => cardPlace(a) - cardPlace(b) || a.order - b.order)
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
