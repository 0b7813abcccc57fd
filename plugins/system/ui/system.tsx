/**
 * The system page (/system): this server's facts, hostd's updates, Admin Privileges (the root helper and its
 * allowlisted actions), power, and the rest of the settings snapshot. Network services are the network plugin's
 * own page. Everyone sees the state; only admins get the controls.
 */
import { useState } from 'preact/hooks'
import {
  Async,
  Button,
  Card,
  KeyValues,
  PageHeader,
  defineElement,
  adoptStyles,
  useResource,
  type PageContext,
} from '@hostd/ui'
import css from './system.css' with { type: 'text' }
import { HostFacts } from './parts/facts.tsx'
import { PowerCard } from './parts/power.tsx'
import { PrivilegesCard } from './parts/privileges.tsx'
import type { Privileged, Settings } from './parts/model.ts'
import { UpdatesCard } from './parts/updates.tsx'

adoptStyles('system', css)

const yesNo = (v: boolean | null, yes = 'yes', no = 'no') => (v === null ? 'unknown' : v ? yes : no)

function SystemPage({ ctx }: { ctx: PageContext }) {
  // Refresh reads everything again: the two resources here, and the cards' own through `generation`.
  const [generation, setGeneration] = useState(0)
  const privileged = useResource(
    (signal) => ctx.api.get<Privileged>('/api/system/privileged', { signal }),
    [generation],
  )
  const settings = useResource((signal) => ctx.api.get<Settings>('/api/system/settings', { signal }), [generation])
  const helperAvailable = privileged.data?.helper.available === true
  const reload = () => setGeneration((g) => g + 1)
  return (
    <>
      <PageHeader
        title="System"
        description="This server, hostd's updates, Admin Privileges, power and the other settings."
        actions={
          <Button icon="refresh" onClick={reload} busy={privileged.loading && privileged.data !== undefined}>
            Refresh
          </Button>
        }
      />
      <div class="system-stack">
        <div class="system-grid">
          <Card title="This server">
            <HostFacts ctx={ctx} detailed generation={generation} />
          </Card>
          <UpdatesCard ctx={ctx} settings={settings.data} helperAvailable={helperAvailable} generation={generation} />
        </div>
        <PrivilegesCard ctx={ctx} privileged={privileged} onChanged={reload} />
        <div class="system-grid">
          <PowerCard ctx={ctx} hostname={settings.data?.hostname ?? null} helperAvailable={helperAvailable} />
          <Card title="Other settings">
            <Async resource={settings} label="Reading the settings…">
              {(s) => (
                <KeyValues
                  items={[
                    // SSH's and network time's on/off are in Admin Privileges above: only their details here.
                    ...(s.ssh.installed
                      ? ([
                          ['SSH port', s.ssh.port ? String(s.ssh.port) : 'default (22)'],
                          ['SSH root sign-in', s.ssh.permitRootLogin ?? 'default'],
                          ['SSH passwords', s.ssh.passwordAuthentication ?? 'default'],
                        ] as [string, string][])
                      : []),
                    ...(s.ntp.daemon ? ([['Time service', s.ntp.daemon]] as [string, string][]) : []),
                    [
                      'Firewall',
                      s.firewall.tool ? `${s.firewall.tool}: ${yesNo(s.firewall.enabled, 'on', 'off')}` : 'none found',
                    ],
                    ['Automatic security updates', s.autoUpdate.unattendedUpgrades ? 'on' : 'off'],
                  ]}
                />
              )}
            </Async>
          </Card>
        </div>
      </div>
    </>
  )
}

defineElement('system-page', ({ ctx }) => <SystemPage ctx={ctx} />)
