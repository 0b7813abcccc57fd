/**
 * Command lines given as one string (`command`, `entrypoint`, `extraArgs`) split into words as a POSIX shell splits
 * them: quotes and backslashes, no expansion. The words go to the engine as they are; no shell ever sees them.
 */
import { ContainerErrors } from '../errors.ts'

/** Splits a command line into words the way a POSIX shell would, without any expansion. */
export function shellSplit(line: string): string[] {
  const words: string[] = []
  let word = ''
  let inWord = false
  let quote: '"' | "'" | null = null
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!
    if (quote === "'") {
      if (ch === "'") quote = null
      else word += ch
      continue
    }
    if (quote === '"') {
      if (ch === '"') quote = null
      else if (ch === '\\' && i + 1 < line.length && '"\\$`\n'.includes(line[i + 1]!)) {
        if (line[i + 1] !== '\n') word += line[i + 1]
        i++
      } else word += ch
      continue
    }
    if (ch === "'" || ch === '"') {
      quote = ch
      inWord = true
    } else if (ch === '\\') {
      if (i + 1 < line.length) {
        if (line[i + 1] !== '\n') {
          word += line[i + 1]
          inWord = true
        }
        i++
      }
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(word)
      word = ''
      inWord = false
    } else {
      word += ch
      inWord = true
    }
  }
  if (quote) throw ContainerErrors.invalidSpec(`unterminated ${quote} quote in "${line.slice(0, 80)}"`)
  if (inWord) words.push(word)
  return words
}
