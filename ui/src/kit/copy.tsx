import { useEffect, useState } from 'preact/hooks'
import { Button, type ButtonProps } from './button.tsx'
import { toast } from './toast.tsx'

export interface CopyButtonProps extends Omit<ButtonProps, 'onClick' | 'children' | 'icon'> {
  /** What goes to the clipboard. */
  text: string
  /** The button's label (say what is copied: "Copy token"). */
  label?: string
}

/** Copies text to the clipboard (a token, a key, codes); says "Copied" for a moment. */
export function CopyButton({ text, label = 'Copy', ...rest }: CopyButtonProps) {
  const [copied, setCopied] = useState(false)
  useEffect(() => {
    if (!copied) return
    const timer = setTimeout(() => setCopied(false), 2000)
    return () => clearTimeout(timer)
  }, [copied])
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text)
      setCopied(true)
    } catch {
      toast.error('The browser refused the clipboard: select the text and copy it yourself.')
    }
  }
  return (
    <Button {...rest} icon={copied ? 'check' : 'copy'} onClick={() => void copy()} aria-live="polite">
      {copied ? 'Copied' : label}
    </Button>
  )
}
