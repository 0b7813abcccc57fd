/** Adds a stylesheet to the document once (by id). The UI's CSP allows inline styles; xterm.js needs its own CSS. */
export function addStyle(id: string, css: string): void {
  if (document.getElementById(id)) return
  const style = document.createElement('style')
  style.id = id
  style.textContent = css
  document.head.append(style)
}
