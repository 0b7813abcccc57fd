import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['kernel/**/*.test.ts', 'helper/**/*.test.ts', 'sdk/**/*.test.ts', 'plugins/**/*.test.ts', 'examples/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**'],
    // The browser tests drive the built UI, spawned daemons run the daemon's build: build both first (skipped when
    // nothing changed).
    globalSetup: ['test/support/build-ui.ts', 'test/support/build-daemon.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll gives up after 1 s by default: too short for a page on a loaded two-core machine. Waits are
    // conditions, never durations, so a longer limit only matters when something is really wrong.
    expect: { poll: { timeout: 15_000 } },
    // One retry of a failed test. In a full run, other tests change the machine's network interfaces (containers,
    // networks, namespaces), and Chromium fails loads in flight when they change; the UI and the harness recover
    // from the cases seen, the retry covers the rest. A test that really fails fails twice. The retries a run needed
    // show in its report ("retry x1"); a failed test leaves its page's report: docs/ARCHITECTURE.md, "Testing pages".
    retry: 1,
    // argon2 at 19 MiB per hash and spawned daemons: two cores, so keep parallelism modest.
    maxWorkers: 2,
    // The JSON report lets .ci/run print its closing "N passed, N failed" line.
    reporters: ['default', ['json', { outputFile: '.hostd-test/results.json' }]],
  },
})
