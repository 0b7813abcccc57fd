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
    const ch = text[i]!
    if (ch === '"') {
      let j = i + 1
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1
      const raw = text.slice(i, j + 1)
      const top = stack[stack.length - 1]
      if (expectKey && top) {
        const key = JSON.parse(raw) as string
        if (top.has(key)) return key
        top.add(key)
        expectKey = false
      }
      i = j + 1
      continue
    }
    if (ch === '{') {
      stack.push(new Set())
      expectKey = true
    } else if (ch === '[') stack.push(null)
    else if (ch === '}' || ch === ']') stack.pop()
    else if (ch === ',') expectKey = stack[stack.length - 1] !== null && stack.length > 0
    i++
  }
  return null
}
