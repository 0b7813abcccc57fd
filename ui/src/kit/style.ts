/**
 * Adds a page's stylesheet to the document once (by id), for CSS a page imports as text
 * (`import css from './lib/page.css' with { type: 'text' }`). The UI's CSP allows inline styles.
 */
export function addStyle(id: string, css: string): void {
  if (document.getElementById(id)) return
  const style = document.createElement('style')
  style.id = id
  style.textContent = css
  document.head.append(style)
}
