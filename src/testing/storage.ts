// The storage conformance suite: the rules of docs/CONTRACT.md (§2 data model, §4 checkpoints,
// §7 durability) as vitest tests, written once and run against every adapter, this package's
// and an app's own (sessionfold/testing).
import { describe } from 'vitest'
import { recordTests } from './records'
import { ruleTests } from './rules'
import { sessionTests } from './sessions'
import { groupOf, type AdapterHarness, type StorageConformanceOptions } from './suite'

/**
 * Registers the storage conformance suite for an adapter: a vitest `describe` block named
 * `storage conformance: <name>`, with one test per rule of the storage contract (sessions and
 * events, checkpoint and history rows, key-value records, refusals, CLOSED after close(),
 * durability across a reopen, the change feed, meta records). Call it at the top level of a
 * test file; vitest runs the tests.
 *
 * `setup` is called once per test and returns a harness on a new, empty store; the suite calls
 * its `teardown` when the test ends. Every adapter of this package passes the whole suite.
 *
 * @param name - What the block is called in vitest's report: `storage conformance: ${name}`.
 * @param setup - Makes a new, empty store for one test (see {@link AdapterHarness}).
 * @param options - Optional members the adapter goes without, a timeout for slow stores.
 * @example
 * ```ts
 * import { storageConformance } from 'sessionfold/testing'
 * import { createMemoryAdapter } from 'sessionfold/adapters/memory'
 *
 * storageConformance('memory', async () => ({ adapter: createMemoryAdapter(), teardown: async () => {} }))
 * ```
 */
export function storageConformance(name: string, setup: () => Promise<AdapterHarness>, options: StorageConformanceOptions = {}): void {
  const group = groupOf(setup, options)
  describe(`storage conformance: ${name}`, () => {
    sessionTests(group)
    recordTests(group)
    ruleTests(group)
  })
}
