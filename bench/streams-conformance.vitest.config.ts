// vitest for bench/streams-conformance.bench-suite.ts alone (bench/streams.ts runs it once a
// server): the repository's vitest.config.ts includes test/**/*.test.ts only.
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  root: fileURLToPath(new URL('..', import.meta.url)),
  server: { host: '127.0.0.1' },
  test: {
    include: ['bench/streams-conformance.bench-suite.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
})
