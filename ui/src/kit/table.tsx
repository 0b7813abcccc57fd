import type { ComponentChildren } from 'preact'
import { useEffect, useMemo, useState } from 'preact/hooks'
import { Icon } from './icons.tsx'

export interface Column<T> {
  key: string
  label: string
  /** Cell content (default: the row's field named `key`). */
  render?: (row: T) => ComponentChildren
  /** Makes the column sortable by this value (default: the field named `key` when `sortable`). */
  sortValue?: (row: T) => string | number | null | undefined
  sortable?: boolean
  align?: 'start' | 'end'
  /** Hidden on narrow screens (a table between 640 and 720 px wide; the phone's cards show it). */
  secondary?: boolean
  /** The card's title on a phone (default: the first column). */
  primary?: boolean
  /** The row's buttons: on a phone they stay beside the card's title (default: a column keyed `actions`). */
  actions?: boolean
}

export interface TableSelection {
  selected: ReadonlySet<string | number>
  onChange: (next: Set<string | number>) => void
}

export interface DataTableProps<T> {
  /** The table's accessible name (shown as its caption unless `hideCaption`). */
  caption: string
  hideCaption?: boolean
  columns: Column<T>[]
  rows: T[]
  rowKey: (row: T) => string | number
  initialSort?: { key: string; direction: 'ascending' | 'descending' }
  /** Shown in place of the body when there are no rows. */
  empty?: ComponentChildren
  /** At most this many rows are rendered, with a pager ("1–100 of 797", Previous page / Next page). */
  pageSize?: number
  /** A checkbox per row ("Select <rowLabel>") and one in the header ("Select all shown": the rows on this page). */
  selection?: TableSelection
  /** A row's name for its checkbox (default: its key). */
  rowLabel?: (row: T) => string
}

const field = (row: unknown, key: string) => (row as Record<string, unknown>)[key]

/** One collator for every sort: localeCompare with options builds one per call (100-200 ms for 1,000 rows). */
const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' })

function compare(a: unknown, b: unknown): number {
  if (a === b) return 0
  if (a === null || a === undefined) return 1
  if (b === null || b === undefined) return -1
  if (typeof a === 'number' && typeof b === 'number') return a - b
  return collator.compare(String(a), String(b))
}

/**
 * A table whose sortable columns sort on their header button (aria-sort tells the current order). Under 640 px each
 * row is a card (the `primary` column its title, the `actions` column beside it, the others labelled below), so a
 * phone never scrolls sideways. `pageSize` renders one page at a time; `selection` adds checkboxes.
 */
export function DataTable<T>({
  caption,
  hideCaption,
  columns,
  rows,
  rowKey,
  initialSort,
  empty,
  pageSize,
  selection,
  rowLabel,
}: DataTableProps<T>) {
  const [sort, setSort] = useState(initialSort ?? null)
  const [page, setPage] = useState(0)
  const sorted = useMemo(() => {
    const column = sort && columns.find((c) => c.key === sort.key)
    if (!column || !sort) return rows
    const value = column.sortValue ?? ((row: T) => field(row, column.key) as string | number)
    const sign = sort.direction === 'ascending' ? 1 : -1
    return [...rows].sort((a, b) => sign * compare(value(a), value(b)))
  }, [rows, sort, columns])
  const pages = pageSize ? Math.max(1, Math.ceil(sorted.length / pageSize)) : 1
  const current = Math.min(page, pages - 1)
  useEffect(() => {
    if (page > pages - 1) setPage(pages - 1)
  }, [page, pages])
  const shown = pageSize ? sorted.slice(current * pageSize, (current + 1) * pageSize) : sorted
  const toggle = (key: string) =>
    setSort((s) => ({ key, direction: s?.key === key && s.direction === 'ascending' ? 'descending' : 'ascending' }))
  const primaryKey = (columns.find((c) => c.primary) ?? columns.find((c) => !c.actions && c.key !== 'actions'))?.key
  const cellClass = (c: Column<T>) =>
    [
      c.align === 'end' ? 'align-end' : '',
      c.secondary ? 'secondary' : '',
      c.key === primaryKey ? 'cell-primary' : '',
      c.actions || c.key === 'actions' ? 'cell-actions' : '',
    ]
      .filter(Boolean)
      .join(' ') || undefined
  const shownKeys = shown.map(rowKey)
  const allShown = selection !== undefined && shownKeys.length > 0 && shownKeys.every((k) => selection.selected.has(k))
  const someShown = selection !== undefined && shownKeys.some((k) => selection.selected.has(k))
  const selectShown = (on: boolean) => {
    if (!selection) return
    const next = new Set(selection.selected)
    for (const k of shownKeys) on ? next.add(k) : next.delete(k)
    selection.onChange(next)
  }
  const selectRow = (key: string | number, on: boolean) => {
    if (!selection) return
    const next = new Set(selection.selected)
    on ? next.add(key) : next.delete(key)
    selection.onChange(next)
  }
  const span = columns.length + (selection ? 1 : 0)
  return (
    <div class="table-block">
      <div class="table-wrap">
        <table class={`table${selection ? ' selectable' : ''}`}>
          <caption class={hideCaption ? 'sr-only' : undefined}>{caption}</caption>
          <thead>
            <tr>
              {selection && (
                <th scope="col" class="cell-select">
                  <input
                    type="checkbox"
                    class="checkbox"
                    aria-label="Select all shown"
                    checked={allShown}
                    indeterminate={someShown && !allShown}
                    disabled={shownKeys.length === 0}
                    onChange={(e) => selectShown(e.currentTarget.checked)}
                  />
                  <span class="select-all-text" aria-hidden="true">
                    Select all shown
                  </span>
                </th>
              )}
              {columns.map((c) => {
                const canSort = c.sortable || Boolean(c.sortValue)
                const active = sort?.key === c.key
                return (
                  <th key={c.key} scope="col" class={cellClass(c)} aria-sort={active ? sort!.direction : undefined}>
                    {canSort ? (
                      <button type="button" class="sort-button" onClick={() => toggle(c.key)}>
                        {c.label}
                        <Icon
                          name={
                            active
                              ? sort!.direction === 'ascending'
                                ? 'chevron-up'
                                : 'chevron-down'
                              : 'chevrons-up-down'
                          }
                          size={14}
                        />
                      </button>
                    ) : (
                      c.label
                    )}
                  </th>
                )
              })}
            </tr>
          </thead>
          <tbody>
            {sorted.length === 0 && empty ? (
              <tr class="row-empty">
                <td colSpan={span} class="table-empty">
                  {empty}
                </td>
              </tr>
            ) : (
              shown.map((row) => {
                const key = rowKey(row)
                const checked = selection?.selected.has(key) ?? false
                return (
                  <tr key={key} class={checked ? 'selected' : undefined}>
                    {selection && (
                      <td class="cell-select">
                        <input
                          type="checkbox"
                          class="checkbox"
                          aria-label={`Select ${rowLabel ? rowLabel(row) : String(key)}`}
                          checked={checked}
                          onChange={(e) => selectRow(key, e.currentTarget.checked)}
                        />
                      </td>
                    )}
                    {columns.map((c) => (
                      <td key={c.key} class={cellClass(c)} data-label={c.label || undefined}>
                        {c.render ? c.render(row) : (field(row, c.key) as ComponentChildren)}
                      </td>
                    ))}
                  </tr>
                )
              })
            )}
          </tbody>
        </table>
      </div>
      {pageSize !== undefined && sorted.length > pageSize && (
        <nav class="pager" aria-label={`${caption}: pages`}>
          <span class="pager-range" role="status">
            {current * pageSize + 1}–{Math.min(sorted.length, (current + 1) * pageSize)} of {sorted.length}
          </span>
          <button
            type="button"
            class="btn btn-secondary btn-sm"
            aria-label="Previous page"
            disabled={current === 0}
            onClick={() => setPage(current - 1)}
          >
            Previous
          </button>
          <button
            type="button"
            class="btn btn-secondary btn-sm"
            aria-label="Next page"
            disabled={current >= pages - 1}
            onClick={() => setPage(current + 1)}
          >
            Next
          </button>
        </nav>
      )}
    </div>
  )
}
