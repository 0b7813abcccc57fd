/** Container networks: list, create (name, driver, subnet), delete with a confirmation. */
import { useState } from 'preact/hooks'
import {
  ApiError,
  Async,
  Badge,
  Button,
  DataTable,
  Dialog,
  Empty,
  FieldErrors,
  Form,
  Select,
  TextField,
  useResource,
  type PageContext,
} from '@hostd/ui'
import { EngineUnavailable } from './common.tsx'
import type { EngineStatus, NetworkItem } from './model.ts'

/** The engine's own networks: it refuses to delete them, so no button is offered. */
const BUILT_IN = new Set(['bridge', 'host', 'none'])
const DRIVERS = [
  { value: 'bridge', label: 'bridge: a private network on this host' },
  { value: 'macvlan', label: 'macvlan: containers appear on the LAN' },
  { value: 'ipvlan', label: 'ipvlan: containers share the host’s MAC' },
]

function CreateNetwork({ ctx, onClose, onCreated }: { ctx: PageContext; onClose: () => void; onCreated: () => void }) {
  return (
    <Dialog open title="Create a network" onClose={onClose}>
      <Form
        submitLabel="Create network"
        actions={<Button onClick={onClose}>Cancel</Button>}
        errorFields={{ HOSTD_CONTAINERS_CONFLICT: 'name' }}
        onSubmit={async (v) => {
          const body = {
            name: String(v.name).trim(),
            driver: String(v.driver),
            ...(String(v.subnet).trim() ? { subnet: String(v.subnet).trim() } : {}),
          }
          try {
            await ctx.api.post('/api/networks', body)
          } catch (err) {
            // The schema's message names the field (body/subnet must match pattern …); the engine's names the subnet.
            if (
              err instanceof ApiError &&
              (err.code === 'HOSTD_REQUEST_INVALID' ||
                err.code === 'HOSTD_CONTAINERS_ENGINE_ERROR' ||
                err.code === 'HOSTD_CONTAINERS_SPEC_INVALID')
            ) {
              const field = /subnet|pool|address/i.test(err.message)
                ? 'subnet'
                : /driver|plugin/i.test(err.message)
                  ? 'driver'
                  : /name/i.test(err.message)
                    ? 'name'
                    : null
              if (field) throw new FieldErrors({ [field]: err.message })
            }
            throw err
          }
          ctx.toast.success(`Network ${body.name} was created`)
          onCreated()
        }}
      >
        <TextField
          name="name"
          label="Name"
          required
          maxLength={64}
          pattern="[a-zA-Z0-9][a-zA-Z0-9_.\-]*"
          autoComplete="off"
          spellcheck={false}
          hint="Letters, digits, _ . -"
        />
        <Select name="driver" label="Driver" options={DRIVERS} defaultValue="bridge" />
        <TextField
          name="subnet"
          label="Subnet"
          autoComplete="off"
          spellcheck={false}
          placeholder="172.30.0.0/24"
          pattern="[0-9a-fA-F:.]+/[0-9]{1,3}"
          hint="Optional: the engine picks a free one when empty."
        />
      </Form>
    </Dialog>
  )
}

export function NetworksView({ ctx }: { ctx: PageContext }) {
  const networks = useResource(
    (signal) => ctx.api.get<{ engine: EngineStatus; items: NetworkItem[] }>('/api/networks', { signal }),
    [],
  )
  const [creating, setCreating] = useState(false)
  const operator = ctx.can('operator')
  const remove = async (n: NetworkItem) => {
    const ok = await ctx.confirm({
      title: `Delete network ${n.name}?`,
      message:
        n.containers > 0
          ? `${n.containers} container${n.containers === 1 ? ' is' : 's are'} attached: the engine refuses until they leave it.`
          : 'Containers can no longer join it.',
      confirmLabel: 'Delete network',
      danger: true,
    })
    if (!ok) return
    try {
      await ctx.api.post(`/api/networks/${encodeURIComponent(n.name)}/delete`)
      ctx.toast.success(`Network ${n.name} was deleted`)
      networks.reload()
    } catch (err) {
      ctx.toast.error(err)
    }
  }
  return (
    <Async resource={networks} label="Loading networks…">
      {(data) =>
        !data.engine.available ? (
          <EngineUnavailable engine={data.engine} onRetry={networks.reload} />
        ) : (
          <div class="stack">
            <div class="toolbar">
              <span class="toolbar-status" aria-live="polite">
                {data.items.length} network{data.items.length === 1 ? '' : 's'}
              </span>
              <div class="page-actions">
                <Button icon="refresh" onClick={networks.reload}>
                  Refresh
                </Button>
                {operator && (
                  <Button variant="primary" icon="plus" onClick={() => setCreating(true)}>
                    Create network
                  </Button>
                )}
              </div>
            </div>
            <DataTable
              caption="Networks"
              hideCaption
              rows={data.items}
              rowKey={(n) => n.id}
              initialSort={{ key: 'name', direction: 'ascending' }}
              empty={<Empty icon="network" title="No networks" />}
              columns={[
                {
                  key: 'name',
                  label: 'Name',
                  sortable: true,
                  render: (n) => (
                    <span class="cell-strong">
                      {n.name}
                      {BUILT_IN.has(n.name) && <Badge>engine</Badge>}
                    </span>
                  ),
                },
                { key: 'driver', label: 'Driver', sortable: true },
                {
                  key: 'subnet',
                  label: 'Subnet',
                  sortable: true,
                  render: (n) => (n.subnet ? <code>{n.subnet}</code> : <span class="muted">–</span>),
                },
                {
                  key: 'gateway',
                  label: 'Gateway',
                  secondary: true,
                  render: (n) => (n.gateway ? <code>{n.gateway}</code> : <span class="muted">–</span>),
                },
                { key: 'scope', label: 'Scope', secondary: true },
                {
                  key: 'internal',
                  label: 'Internet',
                  secondary: true,
                  render: (n) =>
                    n.internal ? <Badge tone="warning">internal only</Badge> : <span class="muted">routed</span>,
                },
                { key: 'containers', label: 'Containers', sortable: true, align: 'end' },
                ...(operator
                  ? [
                      {
                        key: 'actions',
                        label: 'Actions',
                        align: 'end' as const,
                        render: (n: NetworkItem) =>
                          BUILT_IN.has(n.name) ? null : (
                            <Button
                              size="sm"
                              variant="ghost"
                              icon="trash"
                              aria-label={`Delete network ${n.name}`}
                              onClick={() => void remove(n)}
                            >
                              Delete
                            </Button>
                          ),
                      },
                    ]
                  : []),
              ]}
            />
            {creating && (
              <CreateNetwork
                ctx={ctx}
                onClose={() => setCreating(false)}
                onCreated={() => {
                  setCreating(false)
                  networks.reload()
                }}
              />
            )}
          </div>
        )
      }
    </Async>
  )
}
