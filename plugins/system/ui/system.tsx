/**
 * The system page (/system): Admin Privileges (the root helper and its allowlisted actions), power, hostd's
 * updates, and the settings snapshot. Host facts are the overview's cards; network services are the network
 * plugin's own page. Everyone sees the state; only admins get the controls.
 */
import { Button, Card, KeyValues, PageHeader, defineElement, pageStyles, useResource, type PageContext } from '@hostd/ui'
import { PowerCard } from './parts/power.tsx'
import { PrivilegesCard } from './parts/privileges.tsx'
import type { Privileged, Settings } from './parts/shared.tsx'
import { UpdatesCard } from './parts/updates.tsx'

pageStyles('system', `
.system-stack { display: grid; gap: var(--space-4); grid-template-columns: minmax(0, 1fr); }
.system-grid { display: grid; gap: var(--space-4); grid-template-columns: repeat(auto-fit, minmax(min(100%, 24rem), 1fr)); align-items: start; }
.system-badges { display: inline-flex; flex-wrap: wrap; gap: var(--space-1); }
.system-power { list-style: none; margin: 0; padding: 0; display: grid; }
.system-power li { display: flex; gap: var(--space-4); align-items: center; justify-content: space-between; padding: var(--space-3) 0; border-top: 1px solid var(--border-subtle); }
.system-power li:first-child { border-top: 0; padding-top: 0; }
.system-power .btn { min-width: 9.5rem; }
.system-notes { white-space: pre-wrap; color: var(--text-muted); }
`)

const yesNo = (v: boolean | null, yes = 'yes', no = 'no') => (v === null ? 'unknown' : v ? yes : no)

function SystemPage({ ctx }: { ctx: PageContext }) {
  const privileged = useResource((signal) => ctx.api.get<Privileged>('/api/system/privileged', { signal }), [])
  const settings = useResource((signal) => ctx.api.get<Settings>('/api/system/settings', { signal }), [])
  const s = settings.data
  const helperAvailable = privileged.data?.helper.available === true
  const reload = () => {
    privileged.reload()
    settings.reload()
  }
  return (
    <>
      <PageHeader
        title="System"
        description="Admin Privileges, power, hostd's updates and this server's settings."
        actions={<Button icon="refresh" onClick={reload} busy={privileged.loading && privileged.data !== undefined}>Refresh</Button>}
      />
      <div class="system-stack">
        <PrivilegesCard ctx={ctx} privileged={privileged} onChanged={reload} />
        <div class="system-grid">
          <PowerCard ctx={ctx} hostname={s?.hostname ?? null} helperAvailable={helperAvailable} />
          <UpdatesCard ctx={ctx} settings={s} helperAvailable={helperAvailable} />
        </div>
        {s && (
          <Card title="Other settings">
            <KeyValues
              items={[
                ['SSH', s.ssh.installed ? `${s.ssh.running ? 'running' : 'stopped'}${s.ssh.port ? `, port ${s.ssh.port}` : ''}` : 'not installed'],
                ['SSH root sign-in', s.ssh.permitRootLogin ?? 'default'],
                ['SSH passwords', s.ssh.passwordAuthentication ?? 'default'],
                ['Network time', s.ntp.active ? `on (${s.ntp.daemon ?? 'running'})` : 'off'],
                ['Firewall', s.firewall.tool ? `${s.firewall.tool}: ${yesNo(s.firewall.enabled, 'on', 'off')}` : 'none found'],
                ['Automatic security updates', s.autoUpdate.unattendedUpgrades ? 'on' : 'off'],
              ]}
            />
          </Card>
        )}
      </div>
    </>
  )
}

defineElement('system-page', ({ ctx }) => <SystemPage ctx={ctx} />)
