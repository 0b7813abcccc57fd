/**
 * The containers page (`/containers` and below): the list, images and networks as tabs, a container's own view
 * (`/containers/<name>`), the run form (`/containers/run`) and updates (`/containers/updates`). Each has its own
 * URL, so reload and back work.
 */
import { Empty, PageHeader, Button, Tabs, defineElement, type PageContext } from '@hostd/ui'
import { linkStylesheet } from './views/common.tsx'
import { ContainerDetail } from './views/detail.tsx'
import { ImagesView } from './views/images.tsx'
import { ContainerListView } from './views/list.tsx'
import { NetworksView } from './views/networks.tsx'
import { RunView } from './views/run.tsx'
import { UpdatesView } from './views/updates.tsx'
import './views/containers.css'

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

// The page's own stylesheet (the build writes it beside this module) is loaded before the element exists.
void linkStylesheet(new URL('./containers.css', import.meta.url).href).then(() =>
  defineElement('containers-page', ({ ctx }) => <ContainersPage ctx={ctx} />),
)
