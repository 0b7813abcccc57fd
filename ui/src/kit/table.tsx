import type { ComponentChildren } from 'preact'
import { useMemo, useState } from 'preact/hooks'
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
  /** Hidden on narrow screens. */
  secondary?: boolean
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
}

const field = (row: unknown, key: string) => (row as Record<string, unknown>)[key]

function compare(a: unknown, b: unknown): number {
  if (a === b) return 0
  if (a === null || a === undefined) return 1
  if (b === null || b === undefined) return -1
  if (typeof a === 'number' && typeof b === 'number') return a - b
  return String(a).localeCompare(String(b), undefined, { numeric: true, sensitivity: 'base' })
}

/** A table whose sortable columns sort on their header button (aria-sort tells the current order). */
export function DataTable<T>({ caption, hideCaption, columns, rows, rowKey, initialSort, empty }: DataTableProps<T>) {
  const [sort, setSort] = useState(initialSort ?? null)
  const sorted = useMemo(() => {
    const column = sort && columns.find((c) => c.key === sort.key)
    if (!column || !sort) return rows
    const value = column.sortValue ?? ((row: T) => field(row, column.key) as string | number)
    const sign = sort.direction === 'ascending' ? 1 : -1
    return [...rows].sort((a, b) => sign * compare(value(a), value(b)))
  }, [rows, sort, columns])
  const toggle = (key: string) =>
    setSort((s) => ({ key, direction: s?.key === key && s.direction === 'ascending' ? 'descending' : 'ascending' }))
  return (
    <div class="table-wrap">
      <table class="table">
        <caption class={hideCaption ? 'sr-only' : undefined}>{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => {
              const canSort = c.sortable || Boolean(c.sortValue)
              const active = sort?.key === c.key
              return (
                <th
                  key={c.key}
                  scope="col"
                  class={`${c.align === 'end' ? 'align-end' : ''}${c.secondary ? ' secondary' : ''}`}
                  aria-sort={active ? sort!.direction : undefined}
                >
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
            <tr>
              <td colSpan={columns.length} class="table-empty">
                {empty}
              </td>
            </tr>
          ) : (
            sorted.map((row) => (
              <tr key={rowKey(row)}>
                {columns.map((c) => (
                  <td key={c.key} class={`${c.align === 'end' ? 'align-end' : ''}${c.secondary ? ' secondary' : ''}`}>
                    {c.render ? c.render(row) : (field(row, c.key) as ComponentChildren)}
                  </td>
                ))}
              </tr>
            ))
          )}
        </tbody>
      </table>
    </div>
  )
}
