/** Catalog sources: each one's state and skipped entries for everyone; add, refresh and remove for admins. */
import { useState } from 'preact/hooks'
import {
  ApiError,
  Badge,
  Button,
  Dialog,
  FieldErrors,
  Form,
  Icon,
  Select,
  TextField,
  formatDateTime,
  formatRelative,
  type PageContext,
} from '@hostd/ui'
import type { SourceStatus } from './model.ts'

const KIND_LABEL: Record<SourceStatus['kind'], string> = { builtin: 'Built in', directory: 'Folder', url: 'HTTPS URL' }

function describeSkip(s: SourceStatus['skipped'][number]): string {
  const where = [s.file, s.index !== undefined ? `entry ${s.index + 1}` : null, s.id ? `“${s.id}”` : null]
    .filter(Boolean)
    .join(', ')
  return where ? `${where}: ${s.reason}` : s.reason
}

function SourceCard({ ctx, source, onChanged }: { ctx: PageContext; source: SourceStatus; onChanged: () => void }) {
  // A source that could not be read has no name of its own yet.
  const name = source.name || source.id
  const [busy, setBusy] = useState<'refresh' | 'remove' | null>(null)
  const admin = ctx.can('admin')
  const refresh = async () => {
    setBusy('refresh')
    try {
      const s = await ctx.api.post<SourceStatus>(`/api/catalog/sources/${source.id}/refresh`)
      if (s.ok)
        ctx.toast.success(
          `${s.name || s.id}: ${s.apps} app${s.apps === 1 ? '' : 's'} loaded${s.skipped.length ? `, ${s.skipped.length} skipped` : ''}`,
        )
      else ctx.toast.error(`${s.name || s.id} could not be read: ${s.error}`)
      onChanged()
    } catch (err) {
      ctx.toast.error(err)
    } finally {
      setBusy(null)
    }
  }
  const remove = async () => {
    const ok = await ctx.confirm({
      title: `Remove ${name}?`,
      message: 'Its apps leave the catalog. Apps already installed from it keep running.',
      confirmLabel: 'Remove source',
      danger: true,
    })
    if (!ok) return
    setBusy('remove')
    try {
      await ctx.api.post(`/api/catalog/sources/${source.id}/remove`)
      ctx.toast.success(`${name} was removed`)
      onChanged()
    } catch (err) {
      ctx.toast.error(err)
      setBusy(null)
    }
  }
  return (
    <li class="source-card card">
      <div class="source-head">
        <div>
          <h2 class="source-title">{name}</h2>
          <p class="source-location mono">{source.location}</p>
        </div>
        <div class="source-badges">
          <Badge>{KIND_LABEL[source.kind]}</Badge>
          {source.ok ? (
            <Badge tone="success">
              <Icon name="circle-check" size={12} /> OK
            </Badge>
          ) : (
            <Badge tone="danger">
              <Icon name="circle-alert" size={12} /> Error
            </Badge>
          )}
        </div>
      </div>
      {source.error && (
        <p class="form-error">
          <Icon name="circle-alert" /> <span>{source.error}</span>
        </p>
      )}
      <p class="source-facts muted">
        {source.apps} app{source.apps === 1 ? '' : 's'}
        {source.loadedAt && (
          <>
            {' · read '}
            <time dateTime={source.loadedAt} title={formatDateTime(source.loadedAt)}>
              {formatRelative(source.loadedAt)}
            </time>
          </>
        )}
        {' · id '}
        <code>{source.id}</code>
      </p>
      {source.skipped.length > 0 && (
        <details class="source-skipped">
          <summary>
            <Icon name="triangle-alert" size={16} /> {source.skipped.length} entr
            {source.skipped.length === 1 ? 'y' : 'ies'} skipped
            <Icon name="chevron-down" size={16} class="summary-chevron" />
          </summary>
          <ul>
            {source.skipped.map((s, i) => (
              <li key={i}>{describeSkip(s)}</li>
            ))}
          </ul>
        </details>
      )}
      {admin && (
        <div class="source-actions">
          <Button
            size="sm"
            icon="refresh"
            busy={busy === 'refresh'}
            disabled={busy !== null}
            onClick={() => void refresh()}
          >
            Refresh<span class="sr-only"> {name}</span>
          </Button>
          {source.kind !== 'builtin' && (
            <Button
              size="sm"
              variant="ghost"
              icon="trash"
              busy={busy === 'remove'}
              disabled={busy !== null}
              onClick={() => void remove()}
            >
              Remove<span class="sr-only"> {name}</span>
            </Button>
          )}
        </div>
      )}
    </li>
  )
}

/** The server's refusal at its field; a REQUEST_INVALID names the body property ("body/location must …"). */
function atField(err: unknown, givenId: boolean): unknown {
  if (!(err instanceof ApiError)) return err
  if (err.code === 'HOSTD_CATALOG_SOURCE_INVALID') return new FieldErrors({ location: err.message })
  // "A catalog source named <id> exists" is about the id only when one was given (else it was made from the location).
  if (err.code === 'HOSTD_CATALOG_SOURCE_EXISTS')
    return new FieldErrors({
      [givenId && err.message.startsWith('A catalog source named') ? 'id' : 'location']: err.message,
    })
  const property = /body\/(kind|location|id)\b/.exec(err.message)?.[1]
  return property ? new FieldErrors({ [property]: err.message }) : err
}

function AddSource({ ctx, onClose, onAdded }: { ctx: PageContext; onClose: () => void; onAdded: () => void }) {
  const [kind, setKind] = useState<'directory' | 'url'>('directory')
  return (
    <Dialog open title="Add a catalog source" onClose={onClose}>
      <Form
        submitLabel="Add source"
        actions={<Button onClick={onClose}>Cancel</Button>}
        onSubmit={async (v) => {
          const id = String(v.id ?? '').trim()
          const s = await ctx.api
            .post<SourceStatus>('/api/catalog/sources', {
              kind: v.kind,
              location: String(v.location).trim(),
              ...(id ? { id } : {}),
            })
            .catch((err) => {
              throw atField(err, Boolean(id))
            })
          if (s.ok)
            ctx.toast.success(
              `${s.name || s.id} was added: ${s.apps} app${s.apps === 1 ? '' : 's'}${s.skipped.length ? `, ${s.skipped.length} skipped` : ''}`,
            )
          else ctx.toast.error(`${s.name || s.id} was added but could not be read: ${s.error}`)
          onAdded()
        }}
      >
        <Select
          name="kind"
          label="Kind"
          value={kind}
          onChange={(e) => setKind(e.currentTarget.value as 'directory' | 'url')}
          options={[
            { value: 'directory', label: 'A folder on this server' },
            { value: 'url', label: 'An HTTPS address' },
          ]}
        />
        {kind === 'directory' ? (
          <TextField
            key="dir"
            name="location"
            label="Folder"
            required
            pattern="/.*"
            placeholder="/srv/catalog"
            autoComplete="off"
            spellcheck={false}
            hint="An absolute path. Every .json file directly in it is read as a catalog file."
          />
        ) : (
          <TextField
            key="url"
            name="location"
            label="Address"
            type="url"
            required
            pattern="https://.*"
            placeholder="https://example.com/catalog.json"
            autoComplete="off"
            spellcheck={false}
            hint="An https: address of one catalog file, fetched with a timeout and a size cap."
          />
        )}
        <TextField
          name="id"
          label="Id (optional)"
          pattern="[a-z0-9][a-z0-9\-]{0,31}"
          maxLength={32}
          autoComplete="off"
          spellcheck={false}
          hint="Lowercase letters, digits and -; chosen from the location when empty."
        />
      </Form>
    </Dialog>
  )
}

export function Sources({
  ctx,
  sources,
  onChanged,
}: {
  ctx: PageContext
  sources: SourceStatus[]
  onChanged: () => void
}) {
  const [adding, setAdding] = useState(false)
  return (
    <div class="stack">
      <div class="toolbar">
        <p class="muted">
          Where the catalog's apps come from. A bad entry is skipped with its reason; the rest of its source still
          loads.
        </p>
        {ctx.can('admin') && (
          <Button variant="primary" icon="plus" onClick={() => setAdding(true)}>
            Add source
          </Button>
        )}
      </div>
      <ul class="source-list" aria-label="Catalog sources">
        {sources.map((s) => (
          <SourceCard key={s.id} ctx={ctx} source={s} onChanged={onChanged} />
        ))}
      </ul>
      {adding && (
        <AddSource
          ctx={ctx}
          onClose={() => setAdding(false)}
          onAdded={() => {
            setAdding(false)
            onChanged()
          }}
        />
      )}
    </div>
  )
}
