/**
 * A page's own CSS, kept in its plugin's ui/ folder as a string (the build compiles a plugin's pages, not its
 * stylesheets): added once as a <style> element (the UI's CSP allows inline styles). Use the kit's tokens
 * (`var(--space-3)`, `var(--text-muted)`...) so light and dark both work, and prefix classes with the plugin id.
 *
 *   pageStyles('storage', `.storage-crumbs { display: flex; }`)   // at module load
 */
export function pageStyles(id: string, css: string): void {
  const elementId = `page-styles-${id}`
  const existing = document.getElementById(elementId)
  if (existing) {
    if (existing.textContent !== css) existing.textContent = css // a newer version of the plugin
    return
  }
  const style = document.createElement('style')
  style.id = elementId
  style.textContent = css
  document.head.append(style)
}
