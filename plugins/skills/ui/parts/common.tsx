/** Small pieces every skills view uses: the icon, badges, safe markdown, file lists, a draft's expiry. */
import type { ComponentChildren } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import {
  Badge,
  Button,
  DataTable,
  Empty,
  formatDateTime,
  formatRelative,
  Icon,
  iconNames,
  Loading,
  type PageContext,
} from '@hostd/ui'
import { api, type SkillSummary } from './model.ts'

/**
 * A skill's `icon` is free text: a kit icon name shows that icon, a short symbol (an emoji) shows as text, and
 * anything else (a URL: the page's CSP loads nothing from elsewhere) falls back to the sparkles.
 */
export function SkillIcon({ icon, size = 18 }: { icon: string; size?: number }) {
  if (iconNames.includes(icon))
    return (
      <span class="skill-icon">
        <Icon name={icon} size={size} />
      </span>
    )
  if (icon && [...icon].length <= 2 && !/[\w/.:]/.test(icon))
    return (
      <span class="skill-icon skill-icon-text" aria-hidden="true">
        {icon}
      </span>
    )
  return (
    <span class="skill-icon">
      <Icon name="sparkles" size={size} />
    </span>
  )
}

export function SourceBadge({ source }: { source: SkillSummary['source'] }) {
  return source === 'synced' ? <Badge tone="accent">Synced</Badge> : <Badge>Local</Badge>
}

export function EnabledBadge({ enabled }: { enabled: boolean }) {
  return enabled ? <Badge tone="success">Enabled</Badge> : <Badge tone="warning">Disabled</Badge>
}

export function Tags({ tags }: { tags: string[] }) {
  if (tags.length === 0) return <span class="muted">–</span>
  return (
    <ul class="skill-tags" aria-label="Tags">
      {tags.map((t) => (
        <li key={t}>
          <Badge>{t}</Badge>
        </li>
      ))}
    </ul>
  )
}

/** The instructions, formatted or as the SKILL.md source (plain text). */
let renderer: Promise<typeof import('./markdown.ts')> | null = null

/** The markdown as safe HTML; the renderer (micromark, about 22 KB gzipped) loads with the first instructions shown. */
function useMarkdown(text: string): { html?: string; failed?: boolean } {
  const [state, setState] = useState<{ html?: string; failed?: boolean }>({})
  useEffect(() => {
    let live = true
    ;(renderer ??= import('./markdown.ts')).then(
      (m) => live && setState({ html: m.renderMarkdown(text) }),
      () => live && setState({ failed: true }),
    )
    return () => {
      live = false
    }
  }, [text])
  return state
}

export function Instructions({ body, markdown }: { body: string; markdown: string }) {
  const rendered = useMarkdown(body)
  const [chosen, setSource] = useState(false)
  // Without the renderer (a failed load), the source is what can be shown.
  const source = chosen || Boolean(rendered.failed)
  return (
    <div class="stack">
      <fieldset class="skill-view-switch" aria-label="Show the instructions">
        <Button
          size="sm"
          variant={source ? 'ghost' : 'secondary'}
          aria-pressed={!source}
          onClick={() => setSource(false)}
        >
          Formatted
        </Button>
        <Button
          size="sm"
          variant={source ? 'secondary' : 'ghost'}
          aria-pressed={source}
          onClick={() => setSource(true)}
        >
          SKILL.md source
        </Button>
      </fieldset>
      {source ? (
        // biome-ignore lint/a11y/noNoninteractiveTabindex lint/a11y/useSemanticElements: scrolling text, so a keyboard must reach it; named as a region
        <pre class="skill-source" role="region" tabIndex={0} aria-label="SKILL.md source">
          {markdown}
        </pre>
      ) : !body.trim() ? (
        <Empty icon="file-text" title="No instructions">
          SKILL.md holds only its frontmatter.
        </Empty>
      ) : rendered.html === undefined ? (
        <Loading label="Formatting the instructions…" />
      ) : (
        <div class="markdown" dangerouslySetInnerHTML={{ __html: rendered.html }} />
      )}
    </div>
  )
}

/** A skill's supporting files, each downloadable (of the current revision, or of `revision`). */
export function FileList({ skillId, files, revision }: { skillId: string; files: string[]; revision?: number }) {
  return (
    <DataTable
      caption="Supporting files"
      hideCaption
      rows={['SKILL.md', ...files]}
      rowKey={(p) => p}
      columns={[
        { key: 'path', label: 'Path', sortValue: (p) => p, render: (p) => <span class="mono">{p}</span> },
        {
          key: 'download',
          label: 'Download',
          align: 'end',
          render: (p) => (
            <a class="btn btn-ghost btn-sm" href={api.file(skillId, p, revision)} download aria-label={`Download ${p}`}>
              <Icon name="download" size={16} />
            </a>
          ),
        },
      ]}
    />
  )
}

/** When a draft ends (24 hours after it began), as a badge that turns to a warning in its last hour. */
export function DraftExpiry({ expiresAt }: { expiresAt: string }) {
  const left = Date.parse(expiresAt) - Date.now()
  return (
    <span title={formatDateTime(expiresAt)}>
      <Badge tone={left < 3600_000 ? 'warning' : 'neutral'}>
        <Icon name="clock" size={12} /> {left > 0 ? `Expires ${formatRelative(expiresAt)}` : 'Expired'}
      </Badge>
    </span>
  )
}

/** A link inside the page (the shell turns it into a navigation). */
export function PageLink({
  ctx,
  to,
  children,
  class: cls,
}: {
  ctx: PageContext
  to: string
  children: ComponentChildren
  class?: string
}) {
  return (
    <a href={`${ctx.base}${to}`} class={cls}>
      {children}
    </a>
  )
}
