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
