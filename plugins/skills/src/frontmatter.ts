import { createRequire } from 'node:module'
import type * as Yaml from 'yaml'
import { SkillErrors } from './errors.ts'
import { LIMITS } from './limits.ts'

/**
 * yaml is loaded at the first SKILL.md parsed, not at start (docs/ARCHITECTURE.md, "Runtime": libraries a start
 * does not need), and synchronously, as parsing is.
 */
let yamlModule: typeof Yaml | undefined
const yaml = (): typeof Yaml => (yamlModule ??= createRequire(import.meta.url)('yaml') as typeof Yaml)

/** What the summary shows, read from the frontmatter (the request's name wins over the frontmatter's). */
export interface SkillMeta {
  name: string
  description: string
  icon: string
  category: string
  tags: string[]
}

export interface SkillDocument {
  meta: SkillMeta
  /** The parsed frontmatter, with `name` set to the effective name. */
  frontmatter: Record<string, unknown>
  /** The instructions: SKILL.md without its frontmatter block. */
  body: string
  /** The whole SKILL.md as stored (its frontmatter name is the effective name). */
  markdown: string
}

const OPEN = /^\uFEFF?---[ \t]*\r?\n/
const CLOSE = /^(?:---|\.\.\.)[ \t]*(?:\r?\n|$)/m
const CONTROL = /[\u0000-\u001f\u007f]/

/** A skill name: 1-64 characters after trimming, no control characters. */
export function checkName(raw: string): string {
  const name = raw.trim()
  if (name.length === 0) throw SkillErrors.invalidName('The skill name is empty')
  if ([...name].length > LIMITS.nameChars)
    throw SkillErrors.invalidName(`The skill name is longer than ${LIMITS.nameChars} characters`)
  if (CONTROL.test(name)) throw SkillErrors.invalidName('The skill name holds a control character')
  return name
}

function optionalString(fm: Record<string, unknown>, key: string, max: number): string {
  const value = fm[key]
  if (value === undefined || value === null) return ''
  if (typeof value !== 'string') throw SkillErrors.invalidFrontmatter(`Frontmatter "${key}" must be a string`)
  const text = value.trim()
  if ([...text].length > max)
    throw SkillErrors.invalidFrontmatter(`Frontmatter "${key}" is longer than ${max} characters`)
  return text
}

function readTags(value: unknown): string[] {
  if (value === undefined || value === null) return []
  const list = typeof value === 'string' ? value.split(',') : value
  if (!Array.isArray(list) || list.some((t) => typeof t !== 'string')) {
    throw SkillErrors.invalidFrontmatter('Frontmatter "tags" must be a list of strings (or one comma-separated string)')
  }
  const tags = [...new Set((list as string[]).map((t) => t.trim()).filter(Boolean))]
  if (tags.length > LIMITS.tags) throw SkillErrors.invalidFrontmatter(`At most ${LIMITS.tags} tags`)
  const long = tags.find((t) => [...t].length > LIMITS.tagChars)
  if (long)
    throw SkillErrors.invalidFrontmatter(`The tag "${long.slice(0, 20)}…" is longer than ${LIMITS.tagChars} characters`)
  return tags
}

/**
 * Parses SKILL.md: an optional YAML frontmatter block (safe parsing: the core schema, no custom tags, aliases
 * capped, size capped) and the markdown instructions. `name` and `description` are required; `requestName`
 * (when given) wins over the frontmatter's name and is written into the stored SKILL.md; `fallbackName` is used
 * only when neither names the skill (a synced folder's name).
 */
export function parseSkillMarkdown(text: string, requestName?: string, fallbackName?: string): SkillDocument {
  const open = OPEN.exec(text)
  let fm: Record<string, unknown> = {}
  let body = text
  let yamlText: string | null = null
  let doc: ReturnType<typeof Yaml.parseDocument> | null = null
  if (open) {
    const rest = text.slice(open[0].length)
    const close = CLOSE.exec(rest)
    if (!close) throw SkillErrors.invalidFrontmatter('SKILL.md opens a frontmatter block with --- but never closes it')
    yamlText = rest.slice(0, close.index)
    body = rest.slice(close.index + close[0].length)
    if (Buffer.byteLength(yamlText) > LIMITS.frontmatterBytes) {
      throw SkillErrors.invalidFrontmatter(`The frontmatter is larger than ${LIMITS.frontmatterBytes / 1024} KiB`)
    }
    doc = yaml().parseDocument(yamlText, { schema: 'core', uniqueKeys: true, prettyErrors: false })
    if (doc.errors.length > 0)
      throw SkillErrors.invalidFrontmatter(
        `The frontmatter is not valid YAML: ${doc.errors[0]!.message.split('\n')[0]}`,
      )
    if (doc.contents !== null && !yaml().isMap(doc.contents))
      throw SkillErrors.invalidFrontmatter('The frontmatter must be a YAML mapping (key: value lines)')
    let js: unknown
    try {
      js = doc.toJS({ maxAliasCount: 50 })
    } catch (err) {
      throw SkillErrors.invalidFrontmatter(`The frontmatter cannot be read: ${(err as Error).message}`)
    }
    // A JSON round trip: plain data only (no prototypes from keys like __proto__), as the API returns it.
    fm = js === null || js === undefined ? {} : (JSON.parse(JSON.stringify(js)) as Record<string, unknown>)
  }
  const fmName = fm.name
  if (fmName !== undefined && fmName !== null && typeof fmName !== 'string')
    throw SkillErrors.invalidFrontmatter('Frontmatter "name" must be a string')
  const rawName = requestName ?? (typeof fmName === 'string' && fmName.trim() ? fmName : (fallbackName ?? ''))
  if (!rawName.trim())
    throw SkillErrors.invalidName('A skill needs a name: send "name" or put name: in the frontmatter')
  const name = checkName(rawName)
  const description = optionalString(fm, 'description', LIMITS.descriptionChars)
  if (!description)
    throw SkillErrors.invalidFrontmatter(
      'SKILL.md needs a YAML frontmatter block with a non-empty description: (---\\ndescription: ...\\n---)',
    )
  const meta: SkillMeta = {
    name,
    description,
    icon: optionalString(fm, 'icon', LIMITS.iconChars),
    category: optionalString(fm, 'category', LIMITS.categoryChars),
    tags: readTags(fm.tags),
  }
  let markdown = text
  if (fmName !== name) {
    // The stored SKILL.md must agree with the skill's name, so exports and copies carry it.
    if (doc && yamlText !== null) {
      if (doc.contents === null) doc = yaml().parseDocument(`name: ${JSON.stringify(name)}\n`, { schema: 'core' })
      else doc.set('name', name)
      markdown = `---\n${String(doc)}---\n${body}`
    } else {
      markdown = `---\nname: ${JSON.stringify(name)}\n---\n${body}`
    }
  }
  return { meta, frontmatter: { ...fm, name }, body, markdown }
}
