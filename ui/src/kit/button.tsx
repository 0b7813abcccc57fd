import type { ButtonHTMLAttributes, ComponentChildren } from 'preact'
import { Icon, Spinner } from './icons.tsx'

type NativeButton = Omit<ButtonHTMLAttributes<HTMLButtonElement>, 'icon' | 'size' | 'type'>

export interface ButtonProps extends NativeButton {
  variant?: 'primary' | 'secondary' | 'danger' | 'ghost'
  size?: 'sm' | 'md'
  /** An icon name shown before the label. */
  icon?: string
  /** Shows a spinner and disables the button while work runs. */
  busy?: boolean
  type?: 'button' | 'submit' | 'reset'
  children?: ComponentChildren
}

export function Button({
  variant = 'secondary',
  size = 'md',
  icon,
  busy = false,
  type = 'button',
  disabled,
  children,
  class: cls,
  ...rest
}: ButtonProps) {
  return (
    <button
      type={type}
      class={`btn btn-${variant} btn-${size}${cls ? ` ${cls}` : ''}`}
      disabled={Boolean(disabled) || busy}
      aria-busy={busy || undefined}
      {...rest}
    >
      {busy ? <Spinner size={16} /> : icon && <Icon name={icon} size={16} />}
      {children && <span>{children}</span>}
    </button>
  )
}

export interface IconButtonProps extends Omit<ButtonProps, 'children' | 'icon'> {
  icon: string
  /** The accessible name (also the tooltip). Required: an icon alone names nothing. */
  label: string
}

export function IconButton({ icon, label, variant = 'ghost', class: cls, ...rest }: IconButtonProps) {
  return (
    <Button
      {...rest}
      variant={variant}
      class={`btn-icon${cls ? ` ${cls}` : ''}`}
      icon={icon}
      aria-label={label}
      title={label}
    />
  )
}
