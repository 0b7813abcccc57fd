/**
 * Compose's variable interpolation (compose-spec "Interpolation") and its `.env` format, over the parsed file's
 * values: `$VAR`, `${VAR}`, `${VAR:-default}` / `${VAR-default}`, `${VAR:?error}` / `${VAR?error}`,
 * `${VAR:+replacement}` / `${VAR+replacement}`, and `$$` for a literal `$`. Defaults may themselves hold
 * variables. Only the stack's own variables (its `.env`) are read: never hostd's environment.
 */

export interface InterpolationIssue {
  /** Where in the file: `services.web.image`. */
  path: string
  message: string
  /** An unset variable without a default (compose uses an empty string and warns). */
  warning?: boolean
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*/

/** Interpolates one string; `issues` gets each `:?` failure and each unset variable. */
export function interpolateString(
  text: string,
  vars: ReadonlyMap<string, string>,
  path: string,
  issues: InterpolationIssue[],
): string {
  let out = ''
  let i = 0
  while (i < text.length) {
    const c = text[i]!
    if (c !== '$') {
      out += c
      i++
      continue
    }
    const next = text[i + 1]
    if (next === '$') {
      out += '$'
      i += 2
      continue
    }
    if (next === '{') {
      const end = closingBrace(text, i + 2)
      if (end < 0) {
        issues.push({ path, message: `"${text}" has a "\${" without its "}"` })
        return text
      }
      out += expand(text.slice(i + 2, end), vars, path, issues)
      i = end + 1
      continue
    }
    const m = NAME.exec(text.slice(i + 1))
    if (m) {
      out += lookup(m[0], vars, path, issues)
      i += 1 + m[0].length
      continue
    }
    issues.push({ path, message: `"${text}": a "$" must start a variable or be written "$$"` })
    return text
  }
  return out
}

function closingBrace(text: string, from: number): number {
  let depth = 1
  for (let j = from; j < text.length; j++) {
    if (text[j] === '$' && text[j + 1] === '{') {
      depth++
      j++
    } else if (text[j] === '}' && --depth === 0) return j
  }
  return -1
}

function lookup(name: string, vars: ReadonlyMap<string, string>, path: string, issues: InterpolationIssue[]): string {
  const value = vars.get(name)
  if (value === undefined) {
    issues.push({ path, message: `variable ${name} is not set: an empty string is used`, warning: true })
    return ''
  }
  return value
}

function expand(inner: string, vars: ReadonlyMap<string, string>, path: string, issues: InterpolationIssue[]): string {
  const m = NAME.exec(inner)
  if (!m) {
    issues.push({ path, message: `"\${${inner}}" is not a variable` })
    return ''
  }
  const name = m[0]
  const rest = inner.slice(name.length)
  if (rest === '') return lookup(name, vars, path, issues)
  const op = /^(:?[-?+])/.exec(rest)?.[1]
  if (!op) {
    issues.push({ path, message: `"\${${inner}}": only :-, -, :?, ?, :+ and + may follow a variable's name` })
    return ''
  }
  const arg = rest.slice(op.length)
  const value = vars.get(name)
  const unset = value === undefined
  const empty = unset || value === ''
  const colon = op.startsWith(':')
  const missing = colon ? empty : unset
  switch (op.at(-1)) {
    case '-':
      return missing ? interpolateString(arg, vars, path, issues) : value!
    case '?':
      if (missing) {
        const why = interpolateString(arg, vars, path, issues)
        issues.push({ path, message: `variable ${name} is required${why ? `: ${why}` : ''}` })
        return ''
      }
      return value!
    default:
      return missing ? '' : interpolateString(arg, vars, path, issues)
  }
}

/** Interpolates every string value (not keys) of a parsed file, in place of a copy. */
export function interpolateTree(
  value: unknown,
  vars: ReadonlyMap<string, string>,
  issues: InterpolationIssue[],
  path = '',
): unknown {
  if (typeof value === 'string') return interpolateString(value, vars, path || '(top)', issues)
  if (Array.isArray(value)) return value.map((v, i) => interpolateTree(v, vars, issues, `${path}[${i}]`))
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = interpolateTree(v, vars, issues, path ? `${path}.${k}` : k)
    return out
  }
  return value
}

export interface EnvLine {
  line: number
  message: string
}

/**
 * A `.env` or `env_file`: `NAME=value` lines, `#` comments, an optional `export `, values in single quotes taken
 * as they are, in double quotes with \n, \t, \", \\ escapes; an unquoted value ends at ` #`. `errors` gets each
 * line that is not of this form.
 */
export function parseEnvFile(text: string, errors: EnvLine[] = []): Map<string, string> {
  const vars = new Map<string, string>()
  const lines = text.split(/\r?\n/)
  for (let n = 0; n < lines.length; n++) {
    const raw = lines[n]!.trim()
    if (raw === '' || raw.startsWith('#')) continue
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)$/.exec(raw)
    if (!m) {
      errors.push({ line: n + 1, message: `line ${n + 1} is not NAME=value` })
      continue
    }
    let value = m[2]!
    if (value.startsWith("'")) {
      const end = value.indexOf("'", 1)
      if (end < 0) errors.push({ line: n + 1, message: `line ${n + 1}: the single quote is not closed` })
      value = end < 0 ? value.slice(1) : value.slice(1, end)
    } else if (value.startsWith('"')) {
      let out = ''
      let i = 1
      let closed = false
      for (; i < value.length; i++) {
        const c = value[i]!
        if (c === '\\' && i + 1 < value.length) {
          const e = value[++i]!
          out += e === 'n' ? '\n' : e === 't' ? '\t' : e === 'r' ? '\r' : e
        } else if (c === '"') {
          closed = true
          break
        } else out += c
      }
      if (!closed) errors.push({ line: n + 1, message: `line ${n + 1}: the double quote is not closed` })
      value = out
    } else {
      value = value.replace(/\s+#.*$/, '').trim()
    }
    vars.set(m[1]!, value)
  }
  return vars
}
