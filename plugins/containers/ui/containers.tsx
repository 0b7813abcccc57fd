/**
 * The containers page (`/containers` and below): the list, images and networks as tabs, a container's own view
 * (`/containers/<name>`), the run form (`/containers/run`) and updates (`/containers/updates`). Each has its own
 * URL, so reload and back work.
 */
import { Empty, PageHeader, Button, Tabs, adoptStyles, defineElement, type PageContext } from '@hostd/ui'
import css from './containers.css' with { type: 'text' }
import { ContainerDetail } from './parts/detail.tsx'
import { ImagesView } from './parts/images.tsx'
import { ContainerListView } from './parts/list.tsx'
import { NetworksView } from './parts/networks.tsx'
import { RunView } from './parts/run.tsx'
import { UpdatesView } from './parts/updates.tsx'

const TABS = [
  { id: '', label: 'Containers' },
  { id: 'images', label: 'Images' },
  { id: 'networks', label: 'Networks' },
]

function ListFrame({ ctx, tab }: { ctx: PageContext; tab: string }) {
  return (
    <>
      <PageHeader
        title="Containers"
        description="Containers, their images and networks on this host's engine."
        actions={
          ctx.can('operator') && (
            <Button variant="primary" icon="plus" onClick={() => ctx.navigate(`${ctx.base}/run`)}>
              Run
            </Button>
          )
        }
      />
      <Tabs
        label="Containers, images and networks"
        tabs={TABS}
        selected={tab}
        onSelect={(id) => ctx.navigate(id ? `${ctx.base}/${id}` : ctx.base)}
      >
        {tab === 'images' ? (
          <ImagesView ctx={ctx} />
        ) : tab === 'networks' ? (
          <NetworksView ctx={ctx} />
        ) : (
          <ContainerListView ctx={ctx} />
        )}
      </Tabs>
    </>
  )
}

function ContainersPage({ ctx }: { ctx: PageContext }) {
  const parts = ctx.location.value.path.slice(ctx.base.length).split('/').filter(Boolean)
  const [first = '', ...more] = parts
  if (more.length > 0) {
    return (
      <>
        <PageHeader title="Not found" />
        <Empty
          icon="container"
          title="There is nothing at this address"
          action={<Button onClick={() => ctx.navigate(ctx.base)}>All containers</Button>}
        />
      </>
    )
  }
  if (first === '' || first === 'images' || first === 'networks') return <ListFrame ctx={ctx} tab={first} />
  if (first === 'run') return ctx.can('operator') ? <RunView ctx={ctx} /> : <ListFrame ctx={ctx} tab="" />
  if (first === 'updates') return <UpdatesView ctx={ctx} />
  return <ContainerDetail key={first} ctx={ctx} id={decodeURIComponent(first)} />
}

adoptStyles('containers', css)
defineElement('containers-page', ({ ctx }) => <ContainersPage ctx={ctx} />)
