import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: [
      'kernel/**/*.test.ts',
      'helper/**/*.test.ts',
      'sdk/**/*.test.ts',
      'plugins/**/*.test.ts',
      'examples/**/*.test.ts',
      'test/**/*.test.ts',
    ],
    exclude: ['**/node_modules/**'],
    // The browser tests drive the built UI, spawned daemons run the daemon's build: build both first (skipped when
    // nothing changed).
    globalSetup: ['test/support/build-ui.ts', 'test/support/build-daemon.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll gives up after 1 s by default: too short for a page on a loaded two-core machine. Waits are
    // conditions, never durations, so a longer limit only matters when something is really wrong.
    expect: { poll: { timeout: 15_000 } },
    // No retry: a test that fails now and then is a defect to find, and a retry would hide it. The browser tests'
    // Chromium has a network namespace of its own, so other tests' interface changes cannot fail its loads; a failed
    // test leaves its page's report: docs/ARCHITECTURE.md, "Testing pages".
    retry: 0,
    // argon2 at 19 MiB per hash and spawned daemons: two cores, so keep parallelism modest.
    maxWorkers: 2,
    // The JSON report lets .ci/run print its closing "N passed, N failed" line.
    reporters: ['default', ['json', { outputFile: '.hostd-test/results.json' }]],
  },
})
