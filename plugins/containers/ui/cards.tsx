/** The containers plugin's overview card: how many containers run, stopped or otherwise, and updates waiting. */
import { Async, Badge, Icon, adoptStyles, defineElement, useResource, type PageContext } from '@hostd/ui'
import css from './containers.css' with { type: 'text' }
import type { ContainerList } from './parts/model.ts'

const GROUPS = [
  { label: 'Running', tone: 'success', match: (s: string) => s === 'running' },
  { label: 'Stopped', tone: 'neutral', match: (s: string) => s === 'exited' || s === 'created' || s === 'dead' },
  { label: 'Other', tone: 'warning', match: (s: string) => !['running', 'exited', 'created', 'dead'].includes(s) },
] as const

function Summary({ ctx }: { ctx: PageContext }) {
  const list = useResource((signal) => ctx.api.get<ContainerList>('/api/containers', { signal }), [], {
    every: 15_000,
  })
  return (
    <Async resource={list} label="Counting containers…">
      {(data) => {
        if (!data.engine.available) {
          return (
            <p class="ctr-card-note">
              <Icon name="server" /> No container engine is reachable. <a href="/containers">Details</a>
            </p>
          )
        }
        const updates = data.items.filter((c) => c.updateAvailable).length
        return (
          <div class="ctr-card">
            <dl class="ctr-counts">
              {GROUPS.map((g) => {
                const count = data.items.filter((c) => g.match(c.state)).length
                return (
                  <div key={g.label} class={`ctr-count${count ? ` tone-${g.tone}` : ''}`}>
                    <dt>{g.label}</dt>
                    <dd>{count}</dd>
                  </div>
                )
              })}
            </dl>
            <p class="ctr-card-foot">
              {updates > 0 ? (
                <a href="/containers/updates">
                  <Badge tone="warning">{`${updates} update${updates === 1 ? '' : 's'} available`}</Badge>
                </a>
              ) : (
                <span class="detail">{data.items.length ? 'All images up to date' : 'No containers yet'}</span>
              )}
              <a href="/containers">Open containers</a>
            </p>
          </div>
        )
      }}
    </Async>
  )
}

// The page's stylesheet: the card's rules are in it too, and one <style> serves both.
adoptStyles('containers', css)
defineElement('containers-summary', ({ ctx }) => <Summary ctx={ctx} />)
