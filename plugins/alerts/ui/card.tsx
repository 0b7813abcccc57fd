/** The alerts plugin's overview card: how many alerts fire now, the worst few, and a link to the page. */
import { Async, Badge, adoptStyles, defineElement, useResource, type PageContext } from '@hostd/ui'
import type { Alert } from '../src/schemas.ts'
import css from './alerts.css' with { type: 'text' }

interface AlertList {
  items: Alert[]
  firing: number
}

function Card({ ctx }: { ctx: PageContext }) {
  const list = useResource((signal) => ctx.api.get<AlertList>('/api/alerts', { signal }), [], { every: 15_000 })
  return (
    <Async resource={list} label="Reading alerts…">
      {(data) => {
        const firing = data.items.filter((a) => a.state === 'firing')
        return (
          <div class="alerts-card">
            <p class={`alerts-card-count${data.firing ? ' is-firing' : ''}`}>
              <strong>{data.firing}</strong> {data.firing === 1 ? 'alert firing' : 'alerts firing'}
            </p>
            {firing.length === 0 ? (
              <p class="detail">Nothing needs you now.</p>
            ) : (
              <ul class="alerts-card-list">
                {firing.slice(0, 3).map((a) => (
                  <li key={`${a.ruleId}/${a.target}`}>
                    <Badge tone={a.silenced ? 'neutral' : a.severity === 'critical' ? 'danger' : 'warning'}>
                      {a.silenced ? 'silenced' : a.severity}
                    </Badge>{' '}
                    {a.summary}
                  </li>
                ))}
              </ul>
            )}
            <a href="/alerts">Open alerts</a>
          </div>
        )
      }}
    </Async>
  )
}

adoptStyles('alerts', css)
defineElement('alerts-card', ({ ctx }) => <Card ctx={ctx} />)
