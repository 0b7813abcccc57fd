/**
 * The containers plugin's overview card: first what is down that should run (a restart policy or hostd's auto-start
 * keeps it up), then how many containers run, are stopped or otherwise, and updates waiting. Live: the engine's
 * container events (/api/containers/live) read the list again at once, so a container stopped outside hostd shows
 * within a moment.
 */
import { Async, Badge, Icon, adoptStyles, defineElement, useResource, type PageContext } from '@hostd/ui'
import { useEffect, useRef } from 'preact/hooks'
import css from './containers.css' with { type: 'text' }
import { shouldRun, useContainersLive, useDebounced } from './parts/live.ts'
import type { ContainerList } from './parts/model.ts'

const GROUPS = [
  { label: 'Running', tone: 'success', state: 'running', match: (s: string) => s === 'running' },
  {
    label: 'Stopped',
    tone: 'neutral',
    state: 'stopped',
    match: (s: string) => s === 'exited' || s === 'created' || s === 'dead',
  },
  {
    label: 'Other',
    tone: 'warning',
    state: 'other',
    match: (s: string) => !['running', 'exited', 'created', 'dead'].includes(s),
  },
] as const
const SHOWN_DOWN = 3
/** While the list has not learnt every restart policy yet (a fresh daemon fills them in the background). */
const POLICY_RETRY_MS = 1_500

function Summary({ ctx }: { ctx: PageContext }) {
  const list = useResource((signal) => ctx.api.get<ContainerList>('/api/containers', { signal }), [], {
    every: 60_000,
  })
  const reloadSoon = useDebounced(list.reload, 250)
  useContainersLive(ctx, reloadSoon)
  // Restart policies come from a cache the daemon fills in the background: read again until it has them all.
  const retries = useRef(0)
  useEffect(() => {
    if (!list.data?.items.some((c) => c.restartPolicy === '') || retries.current >= 5) return
    retries.current++
    const timer = setTimeout(list.reload, POLICY_RETRY_MS)
    return () => clearTimeout(timer)
  }, [list.loadedAt])

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
        const down = data.items.filter(shouldRun).sort((a, b) => a.name.localeCompare(b.name))
        return (
          <div class="ctr-card">
            {down.length > 0 && (
              // biome-ignore lint/a11y/useSemanticElements: a list of links, not form fields (a fieldset's frame)
              <div class="ctr-down" role="group" aria-label="Down but should run">
                <strong>
                  <Icon name="circle-alert" size={14} />{' '}
                  {`${down.length} container${down.length === 1 ? ' is' : 's are'} down but should run`}
                </strong>
                <ul>
                  {down.slice(0, SHOWN_DOWN).map((c) => (
                    <li key={c.id}>
                      <a href={`/containers/${encodeURIComponent(c.name)}`}>{c.name}</a>{' '}
                      <span class="detail">{c.state}</span>
                    </li>
                  ))}
                </ul>
                <a href="/containers?state=down">
                  {down.length > SHOWN_DOWN ? `See all ${down.length}` : 'See them in the list'}
                </a>
              </div>
            )}
            <dl class="ctr-counts">
              {GROUPS.map((g) => {
                const count = data.items.filter((c) => g.match(c.state)).length
                return (
                  <div key={g.label} class={`ctr-count${count ? ` tone-${g.tone}` : ''}`}>
                    <dt>{g.label}</dt>
                    <dd>
                      {count > 0 ? (
                        <a href={`/containers?state=${g.state}`} aria-label={`${count} ${g.label.toLowerCase()}`}>
                          {count}
                        </a>
                      ) : (
                        count
                      )}
                    </dd>
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
