/**
 * The storage conformance suite, for an adapter of your own: `storageConformance()` registers
 * vitest tests that check an object implementing `StorageAdapter` against the storage contract,
 * the same tests every adapter of this package passes. It imports `vitest` (an optional peer
 * dependency: install it to use this entry); import it from test files only. See the guide's
 * "Testing a storage adapter" page (docs/guide/testing-an-adapter.md).
 *
 * @module sessionfold/testing
 */
export { storageConformance } from './storage'
export type { AdapterHarness, StorageCapability, StorageConformanceOptions } from './suite'
