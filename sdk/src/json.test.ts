import { describe, expect, it } from 'vitest'
import { findDuplicateKey, findUnsafeKey } from './json.ts'

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
    const valid = (text: string) => {
      JSON.parse(text) // throws if the fixture itself is not JSON
      return text
    }
    expect(findDuplicateKey(valid('{"a":"x\\\\","a":1}'))).toBe('a') // the first value ends in an escaped backslash
    const tricky = JSON.stringify('k\\"') // k, an escaped backslash, an escaped quote
    expect(findDuplicateKey(valid(`{${tricky}:1,${tricky}:2}`))).toBe('k\\"')
    expect(findDuplicateKey(valid(JSON.stringify({ a: 'x\\","a":"y', b: 1 })))).toBeNull()
    const big = 'A'.repeat(5_000_000)
    expect(
      findDuplicateKey(`{"files":[{"content":"${big}","path":"a"},{"content":"${big}","path":"b","path":"c"}]}`),
    ).toBe('path')
  })
})

describe('findUnsafeKey', () => {
  it('refuses a __proto__ key and a prototype inside a constructor, at any depth, escaped or not', () => {
    expect(findUnsafeKey('{"__proto__":{"polluted":1}}')).toEqual({ key: '__proto__', problem: 'prototype' })
    expect(findUnsafeKey('{"a":[{"b":{"\\u005f_proto__":1}}]}')).toEqual({ key: '__proto__', problem: 'prototype' })
    expect(findUnsafeKey('{"constructor":{"prototype":{"polluted":1}}}')).toEqual({
      key: 'prototype',
      problem: 'prototype',
    })
    expect(findUnsafeKey('{"x":{"constructor" : {"a":1,"prototype":1}}}')).toEqual({
      key: 'prototype',
      problem: 'prototype',
    })
  })
  it('accepts the same words where they reach no prototype', () => {
    expect(findUnsafeKey('{"constructor":1,"prototype":2,"x":{"prototype":3}}')).toBeNull()
    expect(findUnsafeKey('{"constructor":"x","y":{"prototype":1}}')).toBeNull()
    expect(findUnsafeKey('{"constructor":[{"prototype":1}]}')).toBeNull()
    expect(findUnsafeKey('{"a":"__proto__","b":["constructor",{"prototype":1}]}')).toBeNull()
  })
  it('reports a repeated key as findDuplicateKey does', () => {
    expect(findUnsafeKey('{"a":1,"a":2}')).toEqual({ key: 'a', problem: 'repeated' })
    expect(findDuplicateKey('{"__proto__":1}')).toBeNull()
  })
})
