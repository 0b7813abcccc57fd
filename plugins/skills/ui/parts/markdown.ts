/** SKILL.md instructions as HTML, safely. Loaded on demand (it carries micromark) by common.tsx's Instructions. */
import { micromark } from 'micromark'
import { gfm, gfmHtml } from 'micromark-extension-gfm'

const escapeAttr = (s: string) => s.replace(/"/g, '&quot;')

/**
 * micromark (CommonMark + GitHub tables, task lists, strikethrough) with its defaults, which ESCAPE any HTML in the
 * text and drop javascript:/data: links. Then, on micromark's own output only: headings move one level down (the
 * page has the h1), links open in a new tab without a referrer, images become links (the CSP would block remote
 * images anyway) and task-list boxes become symbols.
 */
export function renderMarkdown(text: string): string {
  return micromark(text, { extensions: [gfm()], htmlExtensions: [gfmHtml()] })
    .replace(/<(\/?)h([1-6])>/g, (_, close: string, level: string) => `<${close}h${Math.min(6, Number(level) + 1)}>`)
    .replace(/<a href="">/g, '<a>')
    .replace(/<a href="/g, '<a target="_blank" rel="noopener noreferrer" href="')
    .replace(/<img src="([^"]*)" alt="([^"]*)"(?: title="[^"]*")? \/>/g, (_, src: string, alt: string) =>
      src
        ? `<a target="_blank" rel="noopener noreferrer" href="${escapeAttr(src)}">${alt || 'image'} (image)</a>`
        : alt,
    )
    .replace(/<input type="checkbox" disabled=""( checked="")? \/>/g, (_, checked?: string) =>
      checked
        ? '<span class="task-box" role="img" aria-label="done">☑</span>'
        : '<span class="task-box" role="img" aria-label="to do">☐</span>',
    )
}
