import { useEffect, useState } from 'preact/hooks'
import { Icon } from '../kit/icons.tsx'
import { toast } from '../kit/toast.tsx'
import { connection, reconnectNow, RECONNECTED } from './connection.ts'

/** "Disconnected: reconnecting in N s" with "Reconnect now", while the daemon does not answer (connection.ts). */
export function ConnectionBanner() {
  const c = connection.value
  const [, tick] = useState(0)
  useEffect(() => {
    if (c.state !== 'offline') return
    const timer = setInterval(() => tick((t) => t + 1), 1000)
    return () => clearInterval(timer)
  }, [c.state])
  useEffect(() => {
    const back = () => toast.success('Connected again')
    addEventListener(RECONNECTED, back)
    return () => removeEventListener(RECONNECTED, back)
  }, [])
  if (c.state !== 'offline') return null
  const seconds = Math.max(0, Math.ceil((c.retryAt - Date.now()) / 1000))
  return (
    <div class="connection-banner" role="alert">
      <Icon name="circle-alert" />
      <p>
        <strong>Disconnected</strong>
        <span aria-live="off">{c.probing ? ': reconnecting…' : `: reconnecting in ${seconds} s`}</span>
        <span class="connection-hint"> The server does not answer; the page comes back by itself once it does.</span>
      </p>
      <button type="button" class="btn btn-secondary btn-sm" disabled={c.probing} onClick={reconnectNow}>
        Reconnect now
      </button>
    </div>
  )
}
