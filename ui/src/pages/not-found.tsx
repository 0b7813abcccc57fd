import { Button } from '../kit/button.tsx'
import { Empty } from '../kit/feedback.tsx'
import { PageHeader } from '../kit/layout.tsx'
import { navigate } from '../shell/router.ts'

export function NotFound() {
  return (
    <>
      <PageHeader title="Page not found" />
      <Empty
        icon="search"
        title="There is no page at this address"
        action={
          <Button variant="primary" onClick={() => navigate('/')}>
            Go to the overview
          </Button>
        }
      >
        It may belong to a plugin that was removed or disabled, or the link is mistyped.
      </Empty>
    </>
  )
}

export function Forbidden({ requiredRole }: { requiredRole: string }) {
  return (
    <>
      <PageHeader title="Not available to you" />
      <Empty icon="lock" title={`This page needs the ${requiredRole} role`}>
        Ask an administrator if you need it.
      </Empty>
    </>
  )
}

/** A page of a plugin that is disabled or failed: says so and leads to the plugin on the Plugins page. */
export function PluginNotRunning({ title, state, to }: { title: string; state: string; to: string }) {
  return (
    <>
      <PageHeader title={title} />
      <Empty
        icon="puzzle"
        title={state === 'failed' ? 'The plugin of this page failed to load' : 'The plugin of this page is disabled'}
        action={
          <Button variant="primary" onClick={() => navigate(to)}>
            See it on the Plugins page
          </Button>
        }
      >
        {state === 'failed'
          ? 'The Plugins page shows its error and where in its code it happened.'
          : 'An administrator can enable it again on the Plugins page.'}
      </Empty>
    </>
  )
}
