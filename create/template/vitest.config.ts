import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A real kernel starts per test file (SQLite, argon2 sign-ins), the page test a daemon and Chromium: room for a
    // slow machine. Conditions are waited for, never durations.
    testTimeout: 30_000,
    hookTimeout: 120_000,
    expect: { poll: { timeout: 15_000 } },
  },
})
