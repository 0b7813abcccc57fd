import type { Static } from '@sinclair/typebox'
import type { EnrollmentSchema, TwoFactorStatusSchema } from '../../../kernel/src/auth/schemas.ts'
import { useEffect, useState } from 'preact/hooks'
import { Button } from '../kit/button.tsx'
import { CopyButton } from '../kit/copy.tsx'
import { Dialog } from '../kit/dialog.tsx'
import { Async, Badge } from '../kit/feedback.tsx'
import { useResource } from '../kit/resource.ts'
import { Form, TextField } from '../kit/form.tsx'
import { Icon } from '../kit/icons.tsx'
import { Card } from '../kit/layout.tsx'
import { toast } from '../kit/toast.tsx'
import { api } from '../shell/session.ts'

type Status = Static<typeof TwoFactorStatusSchema>
type Enrollment = Static<typeof EnrollmentSchema>

const CODE_FIELD = {
  inputMode: 'numeric',
  autoComplete: 'one-time-code',
  pattern: '[0-9 ]{6,7}',
  maxLength: 7,
  placeholder: '123 456',
} as const

/** The secret in groups of four, as authenticator apps show and accept it. */
const grouped = (secret: string) => secret.replace(/(.{4})/g, '$1 ').trim()

/**
 * Turning two-factor on, in three steps: the password again; the QR code (and the key for typing by hand) and a code
 * from the app; the recovery codes, shown once. `onDone` runs when the user has put the codes away.
 */
export function EnrollTwoFactor({
  username,
  onDone,
  onCancel,
}: {
  username: string
  onDone: () => void
  onCancel?: () => void
}) {
  const [enrollment, setEnrollment] = useState<Enrollment | null>(null)
  const [codes, setCodes] = useState<string[] | null>(null)
  const cancel = onCancel && <Button onClick={onCancel}>Cancel</Button>
  if (codes) {
    return (
      <div class="stack">
        <p class="notice tone-success" role="status">
          <Icon name="circle-check" /> Two-factor sign-in is on. From now on, signing in asks for a code from your app.
        </p>
        <RecoveryCodes codes={codes} username={username} />
        <div class="form-actions">
          <Button variant="primary" onClick={onDone}>
            I have saved my recovery codes
          </Button>
        </div>
      </div>
    )
  }
  if (!enrollment) {
    return (
      <Form
        submitLabel="Continue"
        actions={cancel}
        errorFields={{ HOSTD_USERS_WRONG_PASSWORD: 'password' }}
        onSubmit={async (v) =>
          setEnrollment(await api.post<Enrollment>('/api/me/two-factor/start', { password: v.password }))
        }
      >
        <p class="dialog-text">
          You will need an authenticator app on your phone (such as Aegis, Google Authenticator, Microsoft Authenticator
          or 1Password). Once it is on, you stay signed in here, and your other sessions, with the API tokens they made,
          are signed out. First, confirm it is you.
        </p>
        <TextField
          name="password"
          label="Your password"
          type="password"
          required
          autoComplete="current-password"
          autoFocus
        />
      </Form>
    )
  }
  return (
    <Form
      submitLabel="Turn on two-factor"
      actions={cancel}
      errorFields={{ HOSTD_TWO_FACTOR_BAD_CODE: 'code' }}
      onSubmit={async (v) =>
        setCodes(
          (await api.post<{ recoveryCodes: string[] }>('/api/me/two-factor/confirm', { code: v.code })).recoveryCodes,
        )
      }
    >
      <ol class="enroll-steps">
        <li>
          <p>Scan this QR code with your authenticator app.</p>
          <img
            class="qr-code"
            src={`data:image/svg+xml;charset=utf-8,${encodeURIComponent(enrollment.qrSvg)}`}
            alt="QR code to add this server to your authenticator app"
            width={200}
            height={200}
          />
        </li>
        <li>
          <p>Cannot scan it? Type this key into the app instead (time-based, 6 digits).</p>
          <div class="secret-row">
            <label class="sr-only" for="two-factor-secret">
              Secret key
            </label>
            <input
              id="two-factor-secret"
              class="input mono"
              readOnly
              value={grouped(enrollment.secret)}
              onFocus={(e) => e.currentTarget.select()}
            />
            <CopyButton text={enrollment.secret} label="Copy key" size="sm" />
          </div>
        </li>
        <li>
          <p>Enter the code the app now shows.</p>
          <TextField name="code" label="Code from your app" required {...CODE_FIELD} />
        </li>
      </ol>
    </Form>
  )
}

/** Recovery codes, shown once: copy them all, download them as a text file, or print this page. */
export function RecoveryCodes({ codes, username }: { codes: string[]; username: string }) {
  const text = `hostd recovery codes for ${username} (${location.host})\nEach code works once.\n\n${codes.join('\n')}\n`
  const [download, setDownload] = useState<string | undefined>(undefined)
  useEffect(() => {
    const url = URL.createObjectURL(new Blob([text], { type: 'text/plain' }))
    setDownload(url)
    return () => URL.revokeObjectURL(url)
  }, [text])
  return (
    <div class="stack">
      <p>
        <strong>Save these recovery codes now.</strong> Each one signs you in once if you lose your phone. They are not
        shown again.
      </p>
      <ol class="recovery-codes mono" aria-label="Recovery codes">
        {codes.map((code) => (
          <li key={code}>{code}</li>
        ))}
      </ol>
      <div class="toolbar">
        <CopyButton text={codes.join('\n')} label="Copy codes" />
        <a class="btn btn-secondary btn-md" href={download} download={`hostd-recovery-codes-${username}.txt`}>
          <Icon name="download" size={16} />
          <span>Download</span>
        </a>
      </div>
    </div>
  )
}

type Dialogs = 'enroll' | 'codes' | 'disable' | null

/** The account page's two-factor card: status, turn on, new recovery codes, turn off. */
export function TwoFactorCard({ username }: { username: string }) {
  const status = useResource((signal) => api.get<Status>('/api/me/two-factor', { signal }), [])
  const [dialog, setDialog] = useState<Dialogs>(null)
  const [fresh, setFresh] = useState<string[] | null>(null)
  const close = () => {
    setDialog(null)
    setFresh(null)
    status.reload()
  }
  return (
    <Card title="Two-factor sign-in">
      <Async resource={status} label="Loading two-factor status…">
        {(s) => (
          <div class="stack">
            <div class="status-line">
              {s.enabled ? (
                <Badge tone="success">On</Badge>
              ) : (
                <Badge tone={s.required ? 'warning' : 'neutral'}>Off</Badge>
              )}
              <span>
                {s.enabled
                  ? 'Signing in needs your password and a code from your authenticator app.'
                  : 'Signing in needs only your password. Add a code from your phone, so a stolen password alone is not enough.'}
              </span>
            </div>
            {s.enabled && (
              <p class={s.recoveryCodesLeft <= 2 ? 'notice' : 'muted'}>
                {s.recoveryCodesLeft === 0
                  ? 'No recovery codes left: make new ones now.'
                  : `${s.recoveryCodesLeft} of 10 recovery codes left.`}
              </p>
            )}
            {s.required && !s.enabled && (
              <p class="notice">Your administrator requires two-factor sign-in for your account.</p>
            )}
            <div class="toolbar">
              {s.enabled ? (
                <div class="page-actions">
                  <Button icon="refresh" onClick={() => setDialog('codes')}>
                    New recovery codes
                  </Button>
                  <Button
                    variant="danger"
                    onClick={() => setDialog('disable')}
                    disabled={s.required}
                    title={s.required ? 'Your administrator requires it' : undefined}
                  >
                    Turn off
                  </Button>
                </div>
              ) : (
                <Button variant="primary" icon="shield" onClick={() => setDialog('enroll')}>
                  Turn on two-factor
                </Button>
              )}
            </div>
          </div>
        )}
      </Async>

      <Dialog open={dialog === 'enroll'} title="Turn on two-factor sign-in" onClose={close} size="lg">
        {dialog === 'enroll' && <EnrollTwoFactor username={username} onDone={close} onCancel={close} />}
      </Dialog>

      <Dialog open={dialog === 'codes'} title="New recovery codes" onClose={close}>
        {dialog === 'codes' &&
          (fresh ? (
            <>
              <RecoveryCodes codes={fresh} username={username} />
              <div class="form-actions">
                <Button variant="primary" onClick={close}>
                  Done
                </Button>
              </div>
            </>
          ) : (
            <Form
              submitLabel="Make new codes"
              actions={<Button onClick={close}>Cancel</Button>}
              errorFields={{ HOSTD_TWO_FACTOR_BAD_CODE: 'code' }}
              onSubmit={async (v) =>
                setFresh(
                  (await api.post<{ recoveryCodes: string[] }>('/api/me/two-factor/recovery-codes', { code: v.code }))
                    .recoveryCodes,
                )
              }
            >
              <p class="dialog-text">
                Your old recovery codes stop working. Enter a code from your authenticator app to continue.
              </p>
              <TextField name="code" label="Code from your app" required autoFocus {...CODE_FIELD} />
            </Form>
          ))}
      </Dialog>

      <Dialog open={dialog === 'disable'} title="Turn off two-factor sign-in" onClose={close} size="sm">
        {dialog === 'disable' && (
          <Form
            submitLabel="Turn off"
            actions={<Button onClick={close}>Cancel</Button>}
            errorFields={{ HOSTD_USERS_WRONG_PASSWORD: 'password', HOSTD_TWO_FACTOR_BAD_CODE: 'code' }}
            onSubmit={async (v) => {
              await api.post('/api/me/two-factor/disable', { password: v.password, code: v.code })
              toast.success('Two-factor sign-in is off')
              close()
            }}
          >
            <p class="dialog-text">
              Signing in will need only your password. Your recovery codes stop working, and your other sessions, with
              the API tokens they made, are signed out.
            </p>
            <TextField
              name="password"
              label="Your password"
              type="password"
              required
              autoComplete="current-password"
              autoFocus
            />
            <TextField
              name="code"
              label="Code from your app or a recovery code"
              required
              autoComplete="one-time-code"
              maxLength={64}
            />
          </Form>
        )}
      </Dialog>
    </Card>
  )
}
