import type { ComponentType } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { ErrorState, Loading } from '../kit/feedback.tsx'
import { importPage } from './import-retrying.ts'

/** A page whose code loads when it is first shown (each page is its own chunk). */
export function lazyPage<P extends object>(
  load: () => Promise<{ default: ComponentType<P> }>,
  label: string,
): ComponentType<P> {
  let loaded: ComponentType<P> | null = null
  return function LazyPage(props: P) {
    const [, setTick] = useState(0)
    const [error, setError] = useState<unknown>(undefined)
    useEffect(() => {
      if (loaded || error !== undefined) return // after a failure, only Retry loads again
      importPage(load).then((m) => {
        loaded = m.default
        setTick((t) => t + 1)
      }, setError)
    }, [error === undefined])
    if (loaded) {
      const Page = loaded
      return <Page {...props} />
    }
    return error !== undefined ? (
      <ErrorState title={`${label} could not be loaded`} error={error} onRetry={() => setError(undefined)} />
    ) : (
      <Loading label={`Loading ${label}…`} />
    )
  }
}
