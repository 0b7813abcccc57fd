/** Power: sleep, display sleep, restart, shut down; admins only, each confirmed by typing the server's name. */
import { useState } from 'preact/hooks'
import { Button, Card, Icon, formatDateTime, type PageContext } from '@hostd/ui'
import { dryRunText, type PowerResult } from './model.ts'

interface PowerAction {
  path: 'sleep' | 'display-sleep' | 'restart' | 'shutdown'
  label: string
  icon: string
  does: string
  danger: boolean
}

const ACTIONS: PowerAction[] = [
  {
    path: 'display-sleep',
    label: 'Display sleep',
    icon: 'monitor',
    danger: false,
    does: 'Turns the screen off. Everything keeps running.',
  },
  {
    path: 'sleep',
    label: 'Sleep',
    icon: 'clock',
    danger: false,
    does: 'Suspends the server: nothing runs and this page loses it until it wakes (power button, keyboard or Wake-on-LAN).',
  },
  {
    path: 'restart',
    label: 'Restart',
    icon: 'rotate-ccw',
    danger: true,
    does: 'Stops everything and starts again. Containers set to start automatically come back with it.',
  },
  {
    path: 'shutdown',
    label: 'Shut down',
    icon: 'power',
    danger: true,
    does: 'Turns the server off. Someone has to switch it on again by hand.',
  },
]

export function PowerCard({
  ctx,
  hostname,
  helperAvailable,
}: {
  ctx: PageContext
  hostname: string | null
  helperAvailable: boolean
}) {
  const [busy, setBusy] = useState<string | null>(null)
  const [done, setDone] = useState<{ label: string; at: number } | null>(null)
  const admin = ctx.can('admin')

  const run = async (a: PowerAction) => {
    const name = hostname ?? 'this server'
    const ok = await ctx.confirm({
      title: `${a.label}: ${name}?`,
      message: a.does,
      confirmLabel: a.label,
      danger: a.danger,
      typed: hostname ?? a.label.toLowerCase(),
    })
    if (!ok) return
    setBusy(a.path)
    try {
      const result = await ctx.api.post<PowerResult>(`/api/system/power/${a.path}`)
      if (result.dryRun) ctx.toast.info(dryRunText(result.argv))
      else setDone({ label: a.label, at: Date.now() })
    } catch (err) {
      ctx.toast.error(err)
    } finally {
      setBusy(null)
    }
  }

  return (
    <Card title="Power">
      <div class="system-stack">
        {!admin && <p class="muted">Only admins can put the server to sleep, restart it or shut it down.</p>}
        {done && (
          <p class="notice" role="status">
            <Icon name="info" /> {done.label} requested at {formatDateTime(done.at)}. The server may stop answering now;
            reload this page once it is back.
          </p>
        )}
        <ul class="system-power">
          {ACTIONS.map((a) => (
            <li key={a.path}>
              <div>
                <p class="cell-strong">{a.label}</p>
                <p class="muted">{a.does}</p>
              </div>
              {admin && (
                <Button
                  variant={a.danger ? 'danger' : 'secondary'}
                  icon={a.icon}
                  busy={busy === a.path}
                  disabled={!helperAvailable || (busy !== null && busy !== a.path)}
                  onClick={() => void run(a)}
                >
                  {a.label}
                </Button>
              )}
            </li>
          ))}
        </ul>
      </div>
    </Card>
  )
}
