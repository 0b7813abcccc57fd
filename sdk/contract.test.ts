import { describe, expect, it } from 'vitest'
import { existsSync, readFileSync } from 'node:fs'
import { KERNEL_API_VERSION } from './src/index.ts'
import {
  SURFACE_FILE,
  changelogHas,
  contractProblems,
  currentSurface,
  digestOf,
  readRecord,
  type ContractRecord,
} from './contract.ts'

/** The first lines where two surfaces differ, so the failure shows what changed. */
function firstDifferences(recorded: string, current: string, count = 8): string {
  const was = recorded.split('\n')
  const now = current.split('\n')
  const out: string[] = []
  for (let i = 0; i < Math.max(was.length, now.length) && out.length < count; i++)
    if (was[i] !== now[i]) out.push(`line ${i + 1}: recorded ${JSON.stringify(was[i])}, now ${JSON.stringify(now[i])}`)
  return out.join('\n')
}

describe('the plugin contract', () => {
  it('records the public types of @hostd/sdk for the current KERNEL_API_VERSION', () => {
    const surface = currentSurface()
    const problems = contractProblems(readRecord(), { version: KERNEL_API_VERSION, digest: digestOf(surface) })
    const recordedSurface = existsSync(SURFACE_FILE) ? readFileSync(SURFACE_FILE, 'utf8') : ''
    const detail = problems.length ? `\n${firstDifferences(recordedSurface, surface)}` : ''
    expect(problems.join('\n') + detail).toBe('')
  }, 60_000)

  it('has a changelog section for the current version', () => {
    expect(changelogHas(KERNEL_API_VERSION), `sdk/CHANGELOG.md needs a "## ${KERNEL_API_VERSION}" section`).toBe(true)
  })
})

describe('contractProblems', () => {
  const recorded: ContractRecord = { version: '1.1.0', digest: 'sha256:aaa' }

  it('accepts the record as it is', () => {
    expect(contractProblems(recorded, { ...recorded })).toEqual([])
  })

  it('refuses changed types under the same version, and says how to move it', () => {
    const [problem] = contractProblems(recorded, { version: '1.1.0', digest: 'sha256:bbb' })
    expect(problem).toMatch(/changed but KERNEL_API_VERSION is still 1\.1\.0: raise it/)
    expect(problem).toMatch(/the minor for an addition, the major for a break/)
    expect(problem).toMatch(/npm run contract:record$/)
  })

  it('asks to record a raised version', () => {
    expect(contractProblems(recorded, { version: '1.2.0', digest: 'sha256:bbb' })).toEqual([
      'KERNEL_API_VERSION is 1.2.0 but sdk/contract.json records 1.1.0: run npm run contract:record',
    ])
    expect(contractProblems(recorded, { version: '1.2.0', digest: 'sha256:aaa' })[0]).toMatch(
      /is the new version needed/,
    )
    expect(contractProblems(null, recorded)[0]).toMatch(/missing: run npm run contract:record/)
  })
})
