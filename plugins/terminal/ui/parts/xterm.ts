/**
 * xterm.js as the page uses it, in a chunk of its own (about 90 KB gzipped) that loads only with the terminal page:
 * the DOM renderer (no WebGL: it works in every browser and under the page's CSP, and is fast enough for a shell),
 * fit to its box, themes that follow the light or dark setting, and copy and paste keys.
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
  black: '#1b1d22',
  red: '#c0262d',
  green: '#1a7f37',
  yellow: '#9a6700',
  blue: '#2f5fd0',
  magenta: '#8b3fc8',
  cyan: '#1b7c83',
  white: '#6e7781',
  brightBlack: '#57606a',
  brightRed: '#d73a49',
  brightGreen: '#2da44e',
  brightYellow: '#bf8700',
  brightBlue: '#4f6fe5',
  brightMagenta: '#a475f9',
  brightCyan: '#3192aa',
  brightWhite: '#8c959f',
}
const DARK: ITheme = {
  background: '#12151b',
  foreground: '#e7e9ee',
  cursor: '#a5b4fc',
  cursorAccent: '#12151b',
  selectionBackground: '#3b4270',
  black: '#2d3340',
  red: '#f87171',
  green: '#4ade80',
  yellow: '#fbbf24',
  blue: '#60a5fa',
  magenta: '#c084fc',
  cyan: '#2dd4bf',
  white: '#d1d5db',
  brightBlack: '#6b7280',
  brightRed: '#fca5a5',
  brightGreen: '#86efac',
  brightYellow: '#fde68a',
  brightBlue: '#93c5fd',
  brightMagenta: '#d8b4fe',
  brightCyan: '#5eead4',
  brightWhite: '#f9fafb',
}

export interface TerminalView {
  term: Terminal
  /** Fits the terminal to its box now (the page calls it, debounced, when the box changes size). */
  fit(): void
  /** Copies the selection to the clipboard; false when nothing is selected. */
  copySelection(): Promise<boolean>
  dispose(): void
}

/** Creates the terminal in `host` (an element whose size the page controls). */
export function createTerminal(host: HTMLElement, options: { screenReaderMode: boolean }): TerminalView {
  adoptStyles('xterm', xtermCss)
  const dark = matchMedia('(prefers-color-scheme: dark)')
  const term = new Terminal({
    fontFamily: "ui-monospace, 'DejaVu Sans Mono', Menlo, Consolas, monospace",
    fontSize: 14,
    lineHeight: 1.15,
    cursorBlink: true,
    scrollback: 5000,
    // Colours a program picks are lifted to a readable contrast against the background.
    minimumContrastRatio: 4.5,
    screenReaderMode: options.screenReaderMode,
    theme: dark.matches ? DARK : LIGHT,
  })
  const fitAddon = new FitAddon()
  term.loadAddon(fitAddon)
  // The addon fits the terminal to its parent's content box: an inner box, so the host's padding takes the theme's
  // background (xterm paints its own padding black).
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

  const copySelection = async () => {
    if (!term.hasSelection()) return false
    await navigator.clipboard.writeText(term.getSelection())
    return true
  }
  // Ctrl+Shift+C copies, Ctrl+Shift+V pastes (the browser's paste event, which xterm reads, so a paste of any size
  // arrives whole); plain Ctrl+C and Ctrl+V stay the terminal's (interrupt, literal next).
  term.attachCustomKeyEventHandler((event) => {
    if (!event.ctrlKey || !event.shiftKey || event.altKey || event.metaKey) return true
    if (event.code === 'KeyC') {
      if (event.type === 'keydown') void copySelection()
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
    copySelection,
    dispose: () => {
      dark.removeEventListener('change', applyTheme)
      term.dispose()
    },
  }
}
