import type { ComponentChildren } from 'preact'
import { useEffect, useRef } from 'preact/hooks'
import { useUniqueId } from './ids.ts'

export interface PageHeaderProps {
  title: string
  description?: ComponentChildren
  /** Buttons on the right (the page's main actions). */
  actions?: ComponentChildren
  /**
   * Where the page sits, above the title (every page the same): the pages above it with their links; the page itself
   * is added last (its title, aria-current="page").
   */
  breadcrumbs?: { label: string; href: string }[]
}

const titles = { suffix: 'hostd', focusNext: false }

/** The shell: the server name after each page title, and focus to the next page's heading (after a navigation). */
export const pageTitles = {
  setSuffix(suffix: string) {
    titles.suffix = suffix
  },
  focusNextHeading() {
    titles.focusNext = true
  },
}

/**
 * The page's one h1, a line of description and its main actions. It sets the document title, and after a
 * navigation it takes focus, so a screen reader announces the new page.
 */
export function PageHeader({ title, description, actions, breadcrumbs }: PageHeaderProps) {
  const heading = useRef<HTMLHeadingElement>(null)
  useEffect(() => {
    document.title = `${title} · ${titles.suffix}`
    if (titles.focusNext) {
      titles.focusNext = false
      heading.current?.focus()
    }
  }, [title])
  return (
    <header class="page-header">
      <div class="page-heading">
        {breadcrumbs && breadcrumbs.length > 0 && (
          <nav class="breadcrumbs" aria-label="Breadcrumb">
            <ol>
              {breadcrumbs.map((b) => (
                <li key={b.href}>
                  <a href={b.href}>{b.label}</a>
                </li>
              ))}
              <li aria-current="page">{title}</li>
            </ol>
          </nav>
        )}
        <h1 tabIndex={-1} ref={heading}>
          {title}
        </h1>
        {description && <p class="page-description">{description}</p>}
      </div>
      {actions && <div class="page-actions">{actions}</div>}
    </header>
  )
}

export interface CardProps {
  title?: string
  actions?: ComponentChildren
  children: ComponentChildren
  /** Heading level of the title (default 2). */
  level?: 2 | 3
  class?: string
}

/** A titled surface; a section named by its heading. */
export function Card({ title, actions, children, level = 2, class: cls }: CardProps) {
  const id = useUniqueId()
  const H = level === 2 ? 'h2' : 'h3'
  return (
    <section class={`card${cls ? ` ${cls}` : ''}`} aria-labelledby={title ? id : undefined}>
      {(title || actions) && (
        <header class="card-header">
          {title && <H id={id}>{title}</H>}
          {actions && <div class="card-actions">{actions}</div>}
        </header>
      )}
      <div class="card-body">{children}</div>
    </section>
  )
}

export interface TabsProps {
  /** Accessible name of the tab list. */
  label: string
  tabs: { id: string; label: string }[]
  selected: string
  onSelect: (id: string) => void
  /** The selected tab's panel. */
  children?: ComponentChildren
}

/** Tabs with arrow-key movement (roving focus), Home and End; the panel is named by its tab. */
export function Tabs({ label, tabs, selected, onSelect, children }: TabsProps) {
  const base = useUniqueId()
  const list = useRef<HTMLDivElement>(null)
  const move = (event: KeyboardEvent, index: number) => {
    const next =
      event.key === 'ArrowRight'
        ? (index + 1) % tabs.length
        : event.key === 'ArrowLeft'
          ? (index - 1 + tabs.length) % tabs.length
          : event.key === 'Home'
            ? 0
            : event.key === 'End'
              ? tabs.length - 1
              : -1
    if (next < 0) return
    event.preventDefault()
    onSelect(tabs[next]!.id)
    list.current?.querySelectorAll<HTMLElement>('[role=tab]')[next]?.focus()
  }
  return (
    <div class="tabs">
      <div class="tab-list" role="tablist" aria-label={label} ref={list}>
        {tabs.map((t, i) => (
          <button
            key={t.id}
            type="button"
            role="tab"
            id={`${base}-${t.id}`}
            aria-selected={t.id === selected}
            aria-controls={children !== undefined ? `${base}-panel` : undefined}
            tabIndex={t.id === selected ? 0 : -1}
            class="tab"
            onClick={() => onSelect(t.id)}
            onKeyDown={(e) => move(e, i)}
          >
            {t.label}
          </button>
        ))}
      </div>
      {children !== undefined && (
        <div role="tabpanel" id={`${base}-panel`} aria-labelledby={`${base}-${selected}`} class="tab-panel">
          {children}
        </div>
      )}
    </div>
  )
}

/** Facts as a description list: `[['Kernel', '6.1.0'], ...]`. */
export function KeyValues({ items }: { items: [string, ComponentChildren][] }) {
  return (
    <dl class="key-values">
      {items.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  )
}
