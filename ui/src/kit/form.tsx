import {
  createContext,
  type ComponentChildren,
  type PartialInputHTMLAttributes,
  type PartialSelectHTMLAttributes,
  type TextareaHTMLAttributes,
} from 'preact'
import { useContext, useRef, useState } from 'preact/hooks'
import { useUniqueId } from './ids.ts'
import { ApiError, errorDetails, errorMessage } from './api.ts'
import { ErrorDetails } from './feedback.tsx'
import { Button } from './button.tsx'
import { Icon } from './icons.tsx'

export type FormValues = Record<string, string | boolean>

interface FormState {
  errors: Record<string, string>
  clear(name: string): void
}

const FormContext = createContext<FormState>({ errors: {}, clear: () => {} })

/** Thrown by an onSubmit to show messages at fields: `throw new FieldErrors({ username: 'Taken' })`. */
export class FieldErrors extends Error {
  readonly fields: Record<string, string>
  constructor(fields: Record<string, string>) {
    super(Object.values(fields)[0] ?? 'Check the highlighted fields')
    this.fields = fields
  }
}

export interface FormProps {
  /** Receives the fields' values (checkboxes as booleans). Throw (ApiError, FieldErrors) to show an error. */
  onSubmit: (values: FormValues) => unknown
  /** Server error codes shown at a field instead of above the form: `{ HOSTD_USERS_WEAK_PASSWORD: 'password' }`. */
  errorFields?: Record<string, string>
  submitLabel?: string
  /** Extra buttons beside submit (Cancel). */
  actions?: ComponentChildren
  children: ComponentChildren
  /** Accessible name when the form has no heading of its own. */
  label?: string
  class?: string
}

/**
 * A form with field-level errors: the browser's own checks (required, minLength, pattern, type) and the server's
 * answer are both shown at the field they concern, the first one focused; other errors above the buttons.
 * The submit button is busy while onSubmit runs.
 */
export function Form({
  onSubmit,
  errorFields = {},
  submitLabel = 'Save',
  actions,
  children,
  label,
  class: cls,
}: FormProps) {
  const [errors, setErrors] = useState<Record<string, string>>({})
  const [formError, setFormError] = useState<{ message: string; details?: string } | null>(null)
  const [busy, setBusy] = useState(false)
  const ref = useRef<HTMLFormElement>(null)

  const focusField = (name: string) => (ref.current?.elements.namedItem(name) as HTMLElement | null)?.focus?.()

  const submit = async (event: Event) => {
    event.preventDefault()
    const form = ref.current!
    setFormError(null)
    const invalid: Record<string, string> = {}
    for (const el of Array.from(form.elements) as HTMLInputElement[]) {
      if (el.name && el.willValidate && !el.checkValidity()) invalid[el.name] ??= el.validationMessage
    }
    if (Object.keys(invalid).length) {
      setErrors(invalid)
      focusField(Object.keys(invalid)[0]!)
      return
    }
    const values: FormValues = {}
    for (const el of Array.from(form.elements) as HTMLInputElement[]) {
      if (!el.name || el.disabled) continue
      values[el.name] = el.type === 'checkbox' ? el.checked : el.value
    }
    setBusy(true)
    try {
      await onSubmit(values)
      setErrors({})
    } catch (err) {
      const field = err instanceof ApiError ? errorFields[err.code] : undefined
      if (err instanceof FieldErrors) {
        setErrors(err.fields)
        focusField(Object.keys(err.fields)[0]!)
      } else if (field) {
        setErrors({ [field]: errorMessage(err) })
        focusField(field)
      } else if ((err as Error)?.name !== 'AbortError') {
        setFormError({ message: errorMessage(err), details: errorDetails(err) })
      }
    } finally {
      if (ref.current) setBusy(false)
    }
  }

  const state: FormState = {
    errors,
    clear: (name) => errors[name] && setErrors(({ [name]: _, ...rest }) => rest),
  }
  return (
    <FormContext.Provider value={state}>
      <form ref={ref} class={`form${cls ? ` ${cls}` : ''}`} noValidate onSubmit={submit} aria-label={label}>
        {children}
        {formError && (
          <div class="form-error" role="alert">
            <Icon name="circle-alert" />
            <div class="form-error-text">
              <p>{formError.message}</p>
              {formError.details && <ErrorDetails details={formError.details} />}
            </div>
          </div>
        )}
        <div class="form-actions">
          {actions}
          <Button type="submit" variant="primary" busy={busy}>
            {submitLabel}
          </Button>
        </div>
      </form>
    </FormContext.Provider>
  )
}

interface FieldFrameProps {
  id: string
  name: string
  label: string
  hint?: ComponentChildren
  children: (describedBy: string | undefined, invalid: boolean) => ComponentChildren
  inline?: boolean
}

function FieldFrame({ id, name, label, hint, children, inline }: FieldFrameProps) {
  const { errors } = useContext(FormContext)
  const error = errors[name]
  const hintId = hint ? `${id}-hint` : undefined
  const errorId = error ? `${id}-error` : undefined
  const describedBy = [errorId, hintId].filter(Boolean).join(' ') || undefined
  const control = children(describedBy, Boolean(error))
  return (
    <div class={`field${inline ? ' field-inline' : ''}${error ? ' has-error' : ''}`}>
      {inline ? control : <label for={id}>{label}</label>}
      {inline ? <label for={id}>{label}</label> : control}
      {error && (
        <p class="field-error" id={errorId}>
          <Icon name="circle-alert" size={14} /> {error}
        </p>
      )}
      {hint && (
        <p class="field-hint" id={hintId}>
          {hint}
        </p>
      )}
    </div>
  )
}

type InputAttrs = Omit<PartialInputHTMLAttributes<HTMLInputElement>, 'label' | 'name' | 'role' | 'type'> & {
  type?: string
}

export interface TextFieldProps extends InputAttrs {
  name: string
  label: string
  hint?: ComponentChildren
}

/** A labelled input (any text-like type) with its hint and error. Other input attributes pass through. */
export function TextField({ name, label, hint, type = 'text', onInput, ...rest }: TextFieldProps) {
  const id = useUniqueId()
  const { clear } = useContext(FormContext)
  return (
    <FieldFrame id={id} name={name} label={label} hint={hint}>
      {(describedBy, invalid) => (
        <input
          id={id}
          name={name}
          type={type as 'text'}
          class="input"
          aria-describedby={describedBy}
          aria-invalid={invalid || undefined}
          onInput={(e) => {
            clear(name)
            onInput?.(e)
          }}
          {...(rest as object)}
        />
      )}
    </FieldFrame>
  )
}

export interface TextAreaProps extends Omit<TextareaHTMLAttributes<HTMLTextAreaElement>, 'label' | 'name'> {
  name: string
  label: string
  hint?: ComponentChildren
}

export function TextArea({ name, label, hint, onInput, ...rest }: TextAreaProps) {
  const id = useUniqueId()
  const { clear } = useContext(FormContext)
  return (
    <FieldFrame id={id} name={name} label={label} hint={hint}>
      {(describedBy, invalid) => (
        <textarea
          id={id}
          name={name}
          class="input textarea"
          aria-describedby={describedBy}
          aria-invalid={invalid || undefined}
          onInput={(e) => {
            clear(name)
            onInput?.(e)
          }}
          {...rest}
        />
      )}
    </FieldFrame>
  )
}

export interface SelectProps extends Omit<PartialSelectHTMLAttributes<HTMLSelectElement>, 'label' | 'name' | 'role'> {
  name: string
  label: string
  options: { value: string; label: string }[]
  hint?: ComponentChildren
}

export function Select({ name, label, options, hint, defaultValue, ...rest }: SelectProps) {
  const id = useUniqueId()
  return (
    <FieldFrame id={id} name={name} label={label} hint={hint}>
      {(describedBy, invalid) => (
        <select
          id={id}
          name={name}
          class="input select"
          aria-describedby={describedBy}
          aria-invalid={invalid || undefined}
          {...rest}
        >
          {options.map((o) => (
            // A <select> has no defaultValue of its own (Preact would set a dead attribute): the option is selected instead.
            <option
              key={o.value}
              value={o.value}
              selected={defaultValue === undefined ? undefined : o.value === defaultValue}
            >
              {o.label}
            </option>
          ))}
        </select>
      )}
    </FieldFrame>
  )
}

export interface CheckboxProps extends InputAttrs {
  name: string
  label: string
  hint?: ComponentChildren
  /** Shows a switch instead of a box (same checkbox underneath). */
  switch?: boolean
}

export function Checkbox({ name, label, hint, switch: asSwitch, ...rest }: CheckboxProps) {
  const id = useUniqueId()
  return (
    <FieldFrame id={id} name={name} label={label} hint={hint} inline>
      {(describedBy) => (
        <input
          id={id}
          name={name}
          type="checkbox"
          role={asSwitch ? 'switch' : undefined}
          class={asSwitch ? 'switch' : 'checkbox'}
          aria-describedby={describedBy}
          {...(rest as object)}
        />
      )}
    </FieldFrame>
  )
}
