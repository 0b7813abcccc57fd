/**
 * xterm.js for the container console, in a chunk of its own that loads only when a console is opened: fit to its
 * box, colours that follow light or dark (a program's colours lifted to a readable contrast), Ctrl+Shift+C copies.
 * The same settings as the host terminal (plugins/terminal/ui/parts/xterm.ts), which a plugin cannot import.
 */
import { FitAddon } from '@xterm/addon-fit'
import { Terminal, type ITheme } from '@xterm/xterm'
import xtermCss from '@xterm/xterm/css/xterm.css' with { type: 'text' }
import { adoptStyles } from '@hostd/ui'

const LIGHT: ITheme = {
  background: '#fbfbfd',
  foreground: '#1b1d22',
  cursor: '#4f46e5',
  cursorAccent: '#ffffff',
  selectionBackground: '#c7d2fe',
}
const DARK: ITheme = {
  background: '#12151b',
  foreground: '#e7e9ee',
  cursor: '#a5b4fc',
  cursorAccent: '#12151b',
  selectionBackground: '#3b4270',
}

export interface ConsoleView {
  term: Terminal
  fit(): void
  dispose(): void
}

export function createConsole(host: HTMLElement): ConsoleView {
  adoptStyles('xterm', xtermCss)
  const dark = matchMedia('(prefers-color-scheme: dark)')
  const term = new Terminal({
    fontFamily: "ui-monospace, 'DejaVu Sans Mono', Menlo, Consolas, monospace",
    fontSize: 14,
    lineHeight: 1.15,
    cursorBlink: true,
    scrollback: 5000,
    minimumContrastRatio: 4.5,
    theme: dark.matches ? DARK : LIGHT,
  })
  const fitAddon = new FitAddon()
  term.loadAddon(fitAddon)
  const box = document.createElement('div')
  box.style.height = '100%'
  host.replaceChildren(box)
  term.open(box)
  const applyTheme = () => {
    term.options.theme = dark.matches ? DARK : LIGHT
    host.style.background = term.options.theme.background ?? ''
  }
  applyTheme()
  dark.addEventListener('change', applyTheme)
  term.attachCustomKeyEventHandler((event) => {
    if (!event.ctrlKey || !event.shiftKey || event.altKey || event.metaKey) return true
    if (event.code === 'KeyC') {
      if (event.type === 'keydown' && term.hasSelection())
        void navigator.clipboard.writeText(term.getSelection()).catch(() => undefined)
      event.preventDefault()
      return false
    }
    return event.code !== 'KeyV'
  })
  return {
    term,
    fit: () => {
      if (box.clientWidth > 0 && box.clientHeight > 0) fitAddon.fit()
    },
    dispose: () => {
      dark.removeEventListener('change', applyTheme)
      term.dispose()
    },
  }
}
