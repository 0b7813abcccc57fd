/**
 * A page's own stylesheet. Plugin pages keep their CSS in a file beside them and import it as text
 * (`import css from './catalog.css' with { type: 'text' }`, bundled by esbuild; typed by css.d.ts), then
 * `adoptStyles('catalog', css)` puts it in the document once: one `<style>` per id, its text replaced when a newer
 * version of the plugin brings other rules. The page's CSP allows inline styles (see docs/ARCHITECTURE.md).
 */
export function adoptStyles(id: string, css: string): void {
  const existing = document.head.querySelector<HTMLStyleElement>(`style[data-styles="${CSS.escape(id)}"]`)
  if (existing) {
    if (existing.textContent !== css) existing.textContent = css
    return
  }
  const style = document.createElement('style')
  style.dataset.styles = id
  style.textContent = css
  document.head.append(style)
}
