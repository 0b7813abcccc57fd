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
})
