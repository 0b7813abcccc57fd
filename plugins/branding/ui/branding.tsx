/**
 * Branding settings (/branding, admins): the sign-in page's server name, headline, description and background,
 * with a live preview of the sign-in card. Everything is shown as text, never as HTML, here and on the sign-in page.
 * After a change the page tells the shell (`hostd:branding-changed`), which reads the branding again for its header.
 */
import { useState } from 'preact/hooks'
import {
  ApiError,
  Async,
  Button,
  Card,
  FieldErrors,
  FileDrop,
  Form,
  Icon,
  PageHeader,
  ProgressBar,
  TextArea,
  TextField,
  adoptStyles,
  defineElement,
  errorMessage,
  formatBytes,
  useResource,
  type PageContext,
} from '@hostd/ui'
import type { Branding } from '../src/schemas.ts'
import { BACKGROUND_MAX_BYTES, LIMITS } from '../src/limits.ts'
import css from './branding.css' with { type: 'text' }

type Text = Pick<Branding, 'serverName' | 'headline' | 'description'>
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/webp']

/** Tells the shell to read the branding again (its header shows the server name). */
const announce = () => window.dispatchEvent(new Event('hostd:branding-changed'))

/** "12 / 64 characters", counted as the server's cap counts them (characters, not UTF-16 units). */
const counter = (value: string, max: number) => `${[...value].length} / ${max} characters`

/** The server's refusal at its field: TEXT_INVALID starts with the field's name, a schema 400 names "body/<field>". */
function atField(err: unknown): unknown {
  if (!(err instanceof ApiError)) return err
  const field =
    err.code === 'HOSTD_BRANDING_TEXT_INVALID'
      ? /^(serverName|headline|description)\b/.exec(err.message)?.[1]
      : /body\/(serverName|headline|description)\b/.exec(err.message)?.[1]
  return field ? new FieldErrors({ [field]: err.message }) : err
}

/** The sign-in card as it will look: the same text, as text, on the chosen background. */
function Preview({ text, background }: { text: Text; background: string | null }) {
  return (
    <figure class="brand-preview">
      <div
        class="brand-preview-stage"
        style={background ? { backgroundImage: `url("${encodeURI(background)}")` } : undefined}
      >
        <div class="brand-preview-panel">
          <p class="brand-preview-name">
            <span class="brand-mark" aria-hidden="true">
              <Icon name="server" size={14} />
            </span>
            <span>{text.serverName.trim() || 'the host name'}</span>
          </p>
          {text.headline.trim() && <p class="brand-preview-headline">{text.headline}</p>}
          {text.description.trim() && <p class="brand-preview-description">{text.description}</p>}
          <p class="brand-preview-title">Sign in</p>
          <div class="brand-preview-field" aria-hidden="true">
            <span>User name</span>
            <i />
          </div>
          <div class="brand-preview-field" aria-hidden="true">
            <span>Password</span>
            <i />
          </div>
          <div class="brand-preview-button" aria-hidden="true">
            Sign in
          </div>
        </div>
      </div>
      <figcaption>What the sign-in page shows before anyone signs in.</figcaption>
    </figure>
  )
}

function BackgroundSettings({
  ctx,
  background,
  onChange,
  onPreview,
}: {
  ctx: PageContext
  background: string | null
  onChange: (b: Branding) => void
  onPreview: (url: string | null) => void
}) {
  const [upload, setUpload] = useState<{ name: string; loaded: number; total: number } | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [removing, setRemoving] = useState(false)

  const send = async (file: File) => {
    setError(null)
    if (!IMAGE_TYPES.includes(file.type)) return setError(`${file.name} is not a PNG, JPEG or WebP image.`)
    if (file.size > BACKGROUND_MAX_BYTES)
      return setError(
        `${file.name} is ${formatBytes(file.size)}: the background may be at most ${formatBytes(BACKGROUND_MAX_BYTES, 0)}.`,
      )
    const local = URL.createObjectURL(file)
    onPreview(local)
    setUpload({ name: file.name, loaded: 0, total: file.size })
    try {
      const b = await ctx.upload<Branding>('/api/branding/background', file, {
        method: 'PUT',
        onProgress: (loaded, total) => setUpload({ name: file.name, loaded, total }),
      })
      onChange(b)
      ctx.toast.success('The new background is on the sign-in page')
      announce()
    } catch (err) {
      // 413 (too large) and 415 (not an image by its bytes) land here with the server's words.
      setError(errorMessage(err))
    } finally {
      onPreview(null)
      URL.revokeObjectURL(local)
      setUpload(null)
    }
  }

  const remove = async () => {
    const ok = await ctx.confirm({
      title: 'Remove the background?',
      message: 'The sign-in page goes back to its plain background.',
      confirmLabel: 'Remove background',
      danger: true,
    })
    if (!ok) return
    setRemoving(true)
    try {
      await ctx.api.delete('/api/branding/background')
      onChange(await ctx.api.get<Branding>('/api/branding'))
      ctx.toast.success('The background was removed')
      announce()
    } catch (err) {
      ctx.toast.error(err)
    } finally {
      setRemoving(false)
    }
  }

  return (
    <Card title="Background">
      <div class="stack">
        {background ? (
          <div class="brand-current">
            <img src={background} alt="The current background" />
            <Button variant="ghost" icon="trash" busy={removing} onClick={() => void remove()}>
              Remove background
            </Button>
          </div>
        ) : (
          <p class="muted">No background: the sign-in page uses its plain one.</p>
        )}
        <FileDrop
          label="Background image"
          accept={IMAGE_TYPES.join(',')}
          multiple={false}
          disabled={upload !== null}
          onFiles={(files) => void send(files[0]!)}
        >
          PNG, JPEG or WebP, at most {formatBytes(BACKGROUND_MAX_BYTES, 0)}. Drop it here, or
        </FileDrop>
        {upload && (
          <ProgressBar
            label={`Uploading ${upload.name}`}
            value={upload.loaded}
            max={upload.total || 1}
            detail={`${formatBytes(upload.loaded)} of ${formatBytes(upload.total)}`}
          />
        )}
        {error && (
          <p class="form-error" role="alert">
            <Icon name="circle-alert" /> <span>{error}</span>
          </p>
        )}
      </div>
    </Card>
  )
}

function Settings({ ctx, initial }: { ctx: PageContext; initial: Branding }) {
  const [saved, setSaved] = useState(initial)
  const [text, setText] = useState<Text>({
    serverName: initial.serverName,
    headline: initial.headline,
    description: initial.description,
  })
  const [previewBackground, setPreviewBackground] = useState<string | null>(null)
  const field = (name: keyof Text) => ({
    value: text[name],
    onInput: (e: Event) => setText((t) => ({ ...t, [name]: (e.currentTarget as HTMLInputElement).value })),
  })
  const changed =
    text.serverName !== saved.serverName || text.headline !== saved.headline || text.description !== saved.description
  return (
    <div class="brand-layout">
      <div class="stack">
        <Card title="Text">
          <Form
            label="Sign-in page text"
            submitLabel="Save text"
            onSubmit={async () => {
              try {
                const b = await ctx.api.put<Branding>('/api/branding', text)
                setSaved(b)
                setText({ serverName: b.serverName, headline: b.headline, description: b.description })
                ctx.toast.success('The sign-in page shows the new text')
                announce()
              } catch (err) {
                throw atField(err)
              }
            }}
            actions={
              changed && (
                <Button
                  onClick={() =>
                    setText({ serverName: saved.serverName, headline: saved.headline, description: saved.description })
                  }
                >
                  Undo changes
                </Button>
              )
            }
          >
            <TextField
              name="serverName"
              label="Server name"
              maxLength={LIMITS.serverName}
              autoComplete="off"
              hint={`${counter(text.serverName, LIMITS.serverName)}. Also in the header and the tab's title; empty goes back to the host name.`}
              {...field('serverName')}
            />
            <TextField
              name="headline"
              label="Headline"
              maxLength={LIMITS.headline}
              autoComplete="off"
              hint={counter(text.headline, LIMITS.headline)}
              {...field('headline')}
            />
            <TextArea
              name="description"
              label="Description"
              maxLength={LIMITS.description}
              rows={5}
              hint={`${counter(text.description, LIMITS.description)}. Plain text: line breaks are kept, HTML shows as typed.`}
              {...field('description')}
            />
          </Form>
        </Card>
        <BackgroundSettings
          ctx={ctx}
          background={saved.background}
          onChange={setSaved}
          onPreview={setPreviewBackground}
        />
      </div>
      <Card title="Preview" class="brand-preview-card">
        <Preview text={text} background={previewBackground ?? saved.background} />
      </Card>
    </div>
  )
}

function BrandingPage({ ctx }: { ctx: PageContext }) {
  const branding = useResource((signal) => ctx.api.get<Branding>('/api/branding', { signal }), [])
  return (
    <>
      <PageHeader
        title="Branding"
        description="What everyone sees on the sign-in page before signing in: this server's name, a headline, a few words and a background."
      />
      {ctx.can('admin') ? (
        <Async resource={branding} label="Loading the branding…">
          {(b) => <Settings ctx={ctx} initial={b} />}
        </Async>
      ) : (
        <p class="notice">
          <Icon name="lock" /> Only admins change the branding.
        </p>
      )}
    </>
  )
}

adoptStyles('branding', css)
defineElement('branding-page', BrandingPage)
