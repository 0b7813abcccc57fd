/** The containers list: state, ports, health, update badges, icons, auto-start and the lifecycle actions. */
import { Async, Badge, Button, DataTable, Empty, formatRelative, useResource, type PageContext } from '@hostd/ui'
import { AutoStartSwitch, ContainerActions } from './actions.tsx'
import { ContainerIcon, EngineUnavailable, PortLinks, StateBadges } from './common.tsx'
import { containerPath, shortId, type Container, type ContainerList } from './model.ts'

const REFRESH_MS = 5000

/** The image reference, or a short id when its tag has moved on to another image (after a pull of that tag). */
function ImageName({ image }: { image: string }) {
  if (!/^sha256:/.test(image)) return <span class="mono">{image}</span>
  return (
    <span class="mono muted" title={`${image}: its tag now names another image`}>
      {shortId(image)} (untagged)
    </span>
  )
}

function summary(list: ContainerList): string {
  const running = list.items.filter((c) => c.state === 'running').length
  const engine = list.engine.version ? `Engine ${list.engine.version}` : 'Engine'
  return `${engine} · ${list.items.length} container${list.items.length === 1 ? '' : 's'}, ${running} running`
}

export function ContainerListView({ ctx }: { ctx: PageContext }) {
  const list = useResource((signal) => ctx.api.get<ContainerList>('/api/containers', { signal }), [], {
    every: REFRESH_MS,
  })
  const operator = ctx.can('operator')
  const updates = list.data?.items.filter((c) => c.updateAvailable).length ?? 0
  return (
    <Async resource={list} label="Loading containers…">
      {(data) =>
        !data.engine.available ? (
          <EngineUnavailable engine={data.engine} onRetry={list.reload} />
        ) : (
          <div class="stack">
            <div class="toolbar">
              <span class="toolbar-status" aria-live="polite">
                {summary(data)}
              </span>
              <div class="page-actions">
                {operator && updates > 0 && (
                  <Button icon="download" onClick={() => ctx.navigate(`${ctx.base}/updates`)}>
                    Update ({updates})
                  </Button>
                )}
                <Button icon="refresh" onClick={list.reload}>
                  Refresh
                </Button>
              </div>
            </div>
            <DataTable
              caption="Containers"
              hideCaption
              rows={data.items}
              rowKey={(c) => c.id}
              initialSort={{ key: 'name', direction: 'ascending' }}
              empty={
                <Empty
                  icon="container"
                  title="No containers yet"
                  action={
                    operator && (
                      <Button variant="primary" icon="plus" onClick={() => ctx.navigate(`${ctx.base}/run`)}>
                        Run a container
                      </Button>
                    )
                  }
                >
                  {operator
                    ? 'Run one from an image: it is pulled when this host does not have it.'
                    : 'An operator or admin can run containers here.'}
                </Empty>
              }
              columns={[
                {
                  key: 'name',
                  label: 'Name',
                  sortable: true,
                  render: (c) => (
                    <span class="ctr-name">
                      <ContainerIcon name={c.name} />
                      <span class="ctr-name-text">
                        <a href={containerPath(ctx.base, c)} class="cell-strong">
                          {c.name}
                        </a>
                        {c.stackProject && <span class="detail ctr-sub">stack {c.stackProject}</span>}
                        <span class="detail ctr-sub ctr-narrow-only">
                          <ImageName image={c.image} />
                        </span>
                      </span>
                    </span>
                  ),
                },
                {
                  key: 'image',
                  label: 'Image',
                  sortable: true,
                  secondary: true,
                  render: (c) => (
                    <span class="ctr-image">
                      <ImageName image={c.image} />
                      {c.updateAvailable && <Badge tone="warning">Update available</Badge>}
                    </span>
                  ),
                },
                {
                  key: 'state',
                  label: 'State',
                  sortable: true,
                  render: (c) => <StateBadges state={c.state} health={c.health} />,
                },
                { key: 'ports', label: 'Ports', render: (c) => <PortLinks ports={c.ports} name={c.name} /> },
                {
                  key: 'createdAt',
                  label: 'Created',
                  sortable: true,
                  secondary: true,
                  render: (c) => (
                    <time class="ctr-nowrap" dateTime={c.createdAt} title={c.createdAt}>
                      {formatRelative(c.createdAt)}
                    </time>
                  ),
                },
                {
                  key: 'autoStart',
                  label: 'Auto-start',
                  secondary: true,
                  sortValue: (c) => (c.autoStart ? 0 : 1),
                  render: (c) => <AutoStartSwitch ctx={ctx} container={c} onChanged={list.reload} />,
                },
                ...(operator
                  ? [
                      {
                        key: 'actions',
                        label: 'Actions',
                        align: 'end' as const,
                        render: (c: Container) => (
                          <ContainerActions
                            ctx={ctx}
                            container={c}
                            compact
                            onChanged={list.reload}
                            onRemoved={list.reload}
                          />
                        ),
                      },
                    ]
                  : []),
              ]}
            />
          </div>
        )
      }
    </Async>
  )
}
