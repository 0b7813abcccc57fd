import type { Static } from '@sinclair/typebox'
import type { SessionSchema } from '../../../kernel/src/auth/schemas.ts'
import { IconButton, Button } from '../kit/button.tsx'
import { confirm } from '../kit/dialog.tsx'
import { Async, Badge, Empty } from '../kit/feedback.tsx'
import { useResource } from '../kit/resource.ts'
import { formatDateTime, formatRelative } from '../kit/format.ts'
import { Card } from '../kit/layout.tsx'
import { DataTable } from '../kit/table.tsx'
import { toast } from '../kit/toast.tsx'
import { api, sessionEnded } from '../shell/session.ts'

/** A session as `GET /api/me/sessions` lists it (the kernel's schema, as a type only). */
export type SessionInfo = Static<typeof SessionSchema>

const BROWSERS: [RegExp, string][] = [
  [/Edg\//, 'Edge'],
  [/OPR\/|Opera/, 'Opera'],
  [/Firefox\//, 'Firefox'],
  [/Chrom(e|ium)\//, 'Chrome'],
  [/Safari\//, 'Safari'],
  [/^curl\//, 'curl'],
  [/^Wget\//, 'Wget'],
  [/python-requests|aiohttp|httpx/i, 'Python'],
  [/^node|undici/i, 'Node.js'],
  [/^Go-http-client/, 'Go'],
]
const SYSTEMS: [RegExp, string][] = [
  [/Android/, 'Android'],
  [/iPhone|iPad|iOS/, 'iOS'],
  [/Windows/, 'Windows'],
  [/Mac OS X|Macintosh/, 'macOS'],
  [/CrOS/, 'ChromeOS'],
  [/Linux/, 'Linux'],
]

/** "Firefox on Linux" from a user agent (a guess for people; the full text is in the title). */
export function describeAgent(agent: string | null): string {
  if (!agent) return 'Unknown client'
  const browser = BROWSERS.find(([re]) => re.test(agent))?.[1]
  const system = SYSTEMS.find(([re]) => re.test(agent))?.[1]
  return browser && system ? `${browser} on ${system}` : (browser ?? system ?? agent.slice(0, 40))
}

/** Sessions as a table: device, address, when signed in and last used, the current one marked; `onEnd` adds an end button. */
export function SessionTable({
  sessions,
  caption,
  onEnd,
}: {
  sessions: SessionInfo[]
  caption: string
  onEnd?: (s: SessionInfo) => void
}) {
  return (
    <DataTable
      caption={caption}
      hideCaption
      rows={sessions}
      rowKey={(s) => s.id}
      columns={[
        {
          key: 'device',
          label: 'Device',
          render: (s) => (
            <span class="cell-strong" title={s.userAgent ?? undefined}>
              {describeAgent(s.userAgent)}
              {s.current && <Badge tone="accent">This session</Badge>}
            </span>
          ),
        },
        { key: 'ip', label: 'Address', render: (s) => <span class="mono">{s.ip ?? '–'}</span> },
        {
          key: 'createdAt',
          label: 'Signed in',
          sortable: true,
          secondary: true,
          render: (s) => (
            <time dateTime={s.createdAt} title={formatDateTime(s.createdAt)}>
              {formatRelative(s.createdAt)}
            </time>
          ),
        },
        {
          key: 'lastSeenAt',
          label: 'Last active',
          sortable: true,
          render: (s) => (
            <time dateTime={s.lastSeenAt} title={formatDateTime(s.lastSeenAt)}>
              {formatRelative(s.lastSeenAt)}
            </time>
          ),
        },
        ...(onEnd
          ? [
              {
                key: 'actions',
                label: 'Actions',
                align: 'end' as const,
                render: (s: SessionInfo) => (
                  <IconButton
                    icon="log-out"
                    label={
                      s.current
                        ? 'Sign out this session'
                        : `End session: ${describeAgent(s.userAgent)} from ${s.ip ?? 'unknown address'}`
                    }
                    onClick={() => onEnd(s)}
                  />
                ),
              },
            ]
          : []),
      ]}
    />
  )
}

/** Your own sessions: see where you are signed in, end one, or end all the others. */
export function SessionsCard() {
  const sessions = useResource((signal) => api.get<SessionInfo[]>('/api/me/sessions', { signal }), [])
  const end = async (s: SessionInfo) => {
    const ok = await confirm(
      s.current
        ? {
            title: 'Sign out here?',
            message: 'This browser is signed out at once.',
            confirmLabel: 'Sign out',
            danger: true,
          }
        : {
            title: 'End this session?',
            message:
              `${describeAgent(s.userAgent)} from ${s.ip ?? 'an unknown address'} is signed out at once, ` +
              'and whatever it has open (terminals, live views) closes.',
            confirmLabel: 'End session',
            danger: true,
          },
    )
    if (!ok) return
    try {
      await api.post(`/api/me/sessions/${s.id}/end`)
      if (s.current) return sessionEnded()
      toast.success('The session was ended')
      sessions.reload()
    } catch (err) {
      toast.error(err)
    }
  }
  const endOthers = async () => {
    if (
      !(await confirm({
        title: 'End all other sessions?',
        message: 'Every other browser and device signed in as you is signed out at once. This one stays.',
        confirmLabel: 'End other sessions',
        danger: true,
      }))
    )
      return
    try {
      await api.post('/api/me/sessions/end-others')
      toast.success('All other sessions were ended')
      sessions.reload()
    } catch (err) {
      toast.error(err)
    }
  }
  return (
    <Card
      title="Where you are signed in"
      actions={
        <Button
          variant="danger"
          icon="log-out"
          disabled={(sessions.data?.length ?? 0) < 2}
          onClick={() => void endOthers()}
        >
          End all other sessions
        </Button>
      }
    >
      <p class="muted card-intro">
        Ending a session signs that browser or device out at once. API tokens are listed under API tokens.
      </p>
      <Async
        resource={sessions}
        label="Loading your sessions…"
        isEmpty={(list) => list.length === 0}
        empty={<Empty icon="monitor" title="No sessions" />}
      >
        {(list) => <SessionTable sessions={list} caption="Your sessions" onEnd={(s) => void end(s)} />}
      </Async>
    </Card>
  )
}
