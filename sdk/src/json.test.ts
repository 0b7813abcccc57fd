import { describe, expect, it } from 'vitest'
import { findDuplicateKey } from './json.ts'

describe('findDuplicateKey', () => {
  it('names a key repeated in one object, at any depth', () => {
    expect(findDuplicateKey('{"a":1,"a":2}')).toBe('a')
    expect(findDuplicateKey('{"x":{"b":1,"c":[{"d":1,"d":2}]}}')).toBe('d')
    expect(findDuplicateKey('{"a\\u0062":1,"ab":2}')).toBe('ab')
  })
  it('accepts equal keys in different objects and equal strings as values', () => {
    expect(findDuplicateKey('{"a":{"a":1},"b":[{"a":1},{"a":2}],"c":"a"}')).toBeNull()
    expect(findDuplicateKey('{"a":"x\\"y","b":"a","c":["a","a"]}')).toBeNull()
    expect(findDuplicateKey('[1,2,{"k":1}]')).toBeNull()
  })
  it('tells escaped quotes from closing ones, however many backslashes precede them', () => {
    const valid = (text: string) => (JSON.parse(text), text)
    expect(findDuplicateKey(valid('{"a":"x\\\\","a":1}'))).toBe('a') // the first value ends in an escaped backslash
    const tricky = JSON.stringify('k\\"') // k, an escaped backslash, an escaped quote
    expect(findDuplicateKey(valid(`{${tricky}:1,${tricky}:2}`))).toBe('k\\"')
    expect(findDuplicateKey(valid(JSON.stringify({ a: 'x\\","a":"y', b: 1 })))).toBeNull()
    const big = 'A'.repeat(5_000_000)
    expect(findDuplicateKey(`{"files":[{"content":"${big}","path":"a"},{"content":"${big}","path":"b","path":"c"}]}`)).toBe('path')
  })
})
