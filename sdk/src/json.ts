const QUOTE = 34 // "
const BACKSLASH = 92 // \

/** The index of the quote that closes the JSON string opened at `open` (text.length if none). */
function closingQuote(text: string, open: number): number {
  // indexOf runs at memchr speed over long strings (base64 file contents of many MiB); a quote preceded by an
  // odd number of backslashes is escaped and does not close the string.
  for (let j = text.indexOf('"', open + 1); j >= 0; j = text.indexOf('"', j + 1)) {
    let k = j - 1
    while (text.charCodeAt(k) === BACKSLASH) k--
    if ((j - 1 - k) % 2 === 0) return j
  }
  return text.length
}

/**
 * JSON.parse keeps the last of two equal keys silently; a body must not be read one way by us and another way by
 * whatever forwarded it. This scans the text once and names the first key repeated within one object. Call it only
 * on text JSON.parse accepted. The kernel applies it to every JSON body; plugins use it for JSON they parse
 * themselves (WebSocket messages).
 */
export function findDuplicateKey(text: string): string | null {
  const stack: (Set<string> | null)[] = []
  let i = 0
  let expectKey = false
  while (i < text.length) {
    const ch = text.charCodeAt(i)
    if (ch === QUOTE) {
      const j = closingQuote(text, i)
      const top = stack[stack.length - 1]
      if (expectKey && top) {
        const key = JSON.parse(text.slice(i, j + 1)) as string
        if (top.has(key)) return key
        top.add(key)
        expectKey = false
      }
      i = j + 1
      continue
    }
    if (ch === 123 /* { */) {
      stack.push(new Set())
      expectKey = true
    } else if (ch === 91 /* [ */) stack.push(null)
    else if (ch === 125 /* } */ || ch === 93 /* ] */) stack.pop()
    else if (ch === 44 /* , */) expectKey = stack[stack.length - 1] !== null && stack.length > 0
    i++
  }
  return null
}
