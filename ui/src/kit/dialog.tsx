import { signal } from '@preact/signals'
import type { ComponentChildren } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { useUniqueId } from './ids.ts'
import { Button } from './button.tsx'
import { IconButton } from './button.tsx'

export interface DialogProps {
  open: boolean
  title: string
  /** Called on Escape, the close button, or a click outside. */
  onClose: () => void
  children?: ComponentChildren
  /** Buttons at the bottom, e.g. Cancel and the action. */
  actions?: ComponentChildren
  size?: 'sm' | 'md' | 'lg'
}

const FOCUSABLE =
  'a[href], button:not(:disabled), input:not(:disabled):not([type=hidden]), select:not(:disabled), ' +
  'textarea:not(:disabled), summary, [tabindex]:not([tabindex="-1"])'

/** Tab from the last focusable element goes to the first, Shift+Tab from the first to the last: focus stays inside. */
function trapTab(e: KeyboardEvent, dialog: HTMLDialogElement | null) {
  if (e.key !== 'Tab' || !dialog) return
  const all = [...dialog.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((el) => el.getClientRects().length > 0)
  if (all.length === 0) return
  const first = all[0]!
  const last = all[all.length - 1]!
  const active = dialog.ownerDocument.activeElement
  if (e.shiftKey && (active === first || !dialog.contains(active))) {
    e.preventDefault()
    last.focus()
  } else if (!e.shiftKey && (active === last || !dialog.contains(active))) {
    e.preventDefault()
    first.focus()
  }
}

/**
 * Focus goes back to what opened the dialog; when that element is gone (a page re-rendered its row), to the element
 * that now has its id or accessible name, else to the page's main region (never the page body).
 */
function restoreFocus(returnTo: { current: Element | null }) {
  const target = returnTo.current
  returnTo.current = null
  if (!(target instanceof HTMLElement)) return
  queueMicrotask(() => {
    if (target.isConnected) {
      target.focus()
      return
    }
    const label = target.getAttribute('aria-label')
    const doc = target.ownerDocument
    const same =
      (target.id && doc.getElementById(target.id)) ||
      (label && doc.querySelector<HTMLElement>(`${target.tagName.toLowerCase()}[aria-label="${CSS.escape(label)}"]`))
    if (same instanceof HTMLElement) same.focus()
    else doc.querySelector<HTMLElement>('main')?.focus()
  })
}

/**
 * A modal dialog on the native <dialog>: the rest of the page is inert while it is open (focus stays inside),
 * Escape closes it, and focus returns to where it was when it closes. Its title names it.
 */
export function Dialog({ open, title, onClose, children, actions, size = 'md' }: DialogProps) {
  const ref = useRef<HTMLDialogElement>(null)
  const titleId = useUniqueId()
  const returnTo = useRef<Element | null>(null)
  useEffect(() => {
    const dialog = ref.current
    if (!dialog) return
    if (open && !dialog.open) {
      returnTo.current = document.activeElement
      dialog.showModal()
      const first = dialog.querySelector<HTMLElement>(
        '[autofocus], input:not([type=hidden]), select, textarea, .dialog-body button, .dialog-actions button',
      )
      first?.focus()
    } else if (!open && dialog.open) {
      dialog.close()
    }
    if (!open) restoreFocus(returnTo)
  }, [open])
  // Unmounted while open (a page that renders the dialog only while open): focus still goes back.
  useEffect(
    () => () => {
      if (ref.current?.open) ref.current.close()
      restoreFocus(returnTo)
    },
    [],
  )
  return (
    // A click on the backdrop closes it; the keyboard has Escape (onCancel).
    <dialog
      ref={ref}
      class={`dialog dialog-${size}`}
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault()
        onClose()
      }}
      onClick={(e) => e.target === ref.current && onClose()}
      onKeyDown={(e) => trapTab(e, ref.current)}
    >
      {open && (
        <div class="dialog-frame">
          <header class="dialog-header">
            <h2 id={titleId}>{title}</h2>
            <IconButton icon="x" label="Close" onClick={onClose} />
          </header>
          <div class="dialog-body">{children}</div>
          {actions && <footer class="dialog-actions">{actions}</footer>}
        </div>
      )}
    </dialog>
  )
}

export interface ConfirmOptions {
  title: string
  message?: ComponentChildren
  /** The confirm button's label (say what happens: "Remove user"). */
  confirmLabel?: string
  /** A red confirm button, for what cannot be undone. */
  danger?: boolean
  /** The user must type this text before confirming (power off, removing something big). */
  typed?: string
}

interface Pending extends ConfirmOptions {
  resolve: (ok: boolean) => void
}

const pending = signal<Pending | null>(null)

/** Asks for confirmation; resolves true when confirmed, false when cancelled. One at a time. */
export function confirm(options: ConfirmOptions): Promise<boolean> {
  pending.value?.resolve(false)
  return new Promise((resolve) => {
    pending.value = { ...options, resolve }
  })
}

/** Renders the pending confirmation; the shell renders it once. */
export function ConfirmHost() {
  const current = pending.value
  const [typed, setTyped] = useState('')
  const inputId = useUniqueId()
  useEffect(() => setTyped(''), [current])
  const finish = (ok: boolean) => {
    current?.resolve(ok)
    pending.value = null
  }
  const blocked = Boolean(current?.typed) && typed !== current?.typed
  return (
    <Dialog
      open={current !== null}
      title={current?.title ?? ''}
      size="sm"
      onClose={() => finish(false)}
      actions={
        <>
          <Button onClick={() => finish(false)}>Cancel</Button>
          <Button variant={current?.danger ? 'danger' : 'primary'} disabled={blocked} onClick={() => finish(true)}>
            {current?.confirmLabel ?? 'Confirm'}
          </Button>
        </>
      }
    >
      {current?.message && <div class="confirm-message">{current.message}</div>}
      {current?.typed && (
        <div class="field">
          <label for={inputId}>
            Type <strong class="mono">{current.typed}</strong> to confirm
          </label>
          <input
            id={inputId}
            class="input"
            autoComplete="off"
            spellcheck={false}
            value={typed}
            onInput={(e) => setTyped(e.currentTarget.value)}
          />
        </div>
      )}
    </Dialog>
  )
}
