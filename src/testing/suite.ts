// What the groups of the storage conformance suite share: the harness an app's setup returns,
// the options, and how a group registers its tests (on a fresh harness each, skipped when the
// adapter goes without the capability a test is about).
import { expect, it, type TestContext } from 'vitest'
import type { StorageAdapter } from '../storage/types'

/**
 * What the setup function given to {@link storageConformance} returns, once per test: a new,
 * empty store. The suite calls `teardown` once at the end of each test, whatever happened.
 */
export interface AdapterHarness {
  /** The adapter under test, on empty storage. The suite replaces it with what `reopen` returns. */
  adapter: StorageAdapter
  /**
   * Closes the adapter and opens a new one on the same storage, resolving with the new one:
   * a store that outlives `close()` (files, a database) has it, and the suite checks that
   * everything written is still there. Without it, the tests of durability across a reopen
   * are skipped, and the others skip their reopen steps.
   */
  reopen?: () => Promise<StorageAdapter>
  /** Closes the adapter last opened (by setup or by `reopen`) and removes its storage. */
  teardown: () => Promise<void>
}

/**
 * An optional member of `StorageAdapter` that an adapter may go without: `replaceRecords`
 * (without it, a store's key cannot be rotated), `history` (without it, reading a session as
 * it was refolds from its start), `kv` (without it, sync recomputes what it caches), `feed`
 * (the change feed that sync and `changes()` read), `meta` (`getMeta` and `putMeta`, which
 * hold replication cursors and an encrypted store's keys).
 */
export type StorageCapability = 'replaceRecords' | 'history' | 'kv' | 'feed' | 'meta'

/** The options of {@link storageConformance}. */
export interface StorageConformanceOptions {
  /**
   * The optional members the adapter does not have. Their tests are registered as skipped
   * (vitest reports them so) instead of failing, and the other tests leave them out. Default:
   * none, the adapter has all of them, as every adapter of this package does; a test about a
   * member that is missing and not listed here fails, saying so.
   */
  without?: readonly StorageCapability[]
  /**
   * Each test's timeout in milliseconds, for a slow store (a database over a network).
   * Default: vitest's `testTimeout` (5 s unless your config says otherwise). The largest tests
   * write 1,300 events, 1,000 sessions and a 1 MiB event.
   */
  timeout?: number
}

/** How a group registers its tests. @internal */
export interface Group {
  /** A test on a fresh harness, torn down after it; skipped when the adapter goes without `needs`. */
  test(name: string, fn: (h: AdapterHarness) => Promise<void>, needs?: StorageCapability): void
  /** A test that sets up and tears down a harness of its own (`setup`), with vitest's context. */
  own(name: string, fn: (ctx: TestContext) => Promise<void>, needs?: StorageCapability): void
  /** A new harness, as the app's setup makes it. */
  setup(): Promise<AdapterHarness>
  /** Whether the adapter has this optional member (the options do not say it goes without). */
  has(capability: StorageCapability): boolean
}

const MEMBERS: Record<StorageCapability, readonly (keyof StorageAdapter)[]> = {
  replaceRecords: ['replaceRecords'],
  history: ['history'],
  kv: ['kv'],
  feed: ['feed'],
  meta: ['getMeta', 'putMeta'],
}

/** Fails, naming the option, when the adapter lacks a member the options do not excuse. @internal */
export function expectCapability(adapter: StorageAdapter, capability: StorageCapability): void {
  for (const member of MEMBERS[capability]) {
    expect(adapter[member], `the adapter has no ${String(member)}: implement it, or pass { without: ['${capability}'] } to storageConformance`).toBeDefined()
  }
}

/** The group registrar of one suite. @internal */
export function groupOf(setup: () => Promise<AdapterHarness>, options: StorageConformanceOptions): Group {
  const without = new Set(options.without ?? [])
  for (const c of without) {
    if (!Object.hasOwn(MEMBERS, c))
      throw new TypeError(`storageConformance: unknown capability ${JSON.stringify(c)} in "without" (one of ${Object.keys(MEMBERS).join(', ')})`)
  }
  const register = (name: string, needs: StorageCapability | undefined, fn: (ctx: TestContext) => Promise<void>) => {
    if (needs && without.has(needs)) it.skip(`${name} (without ${needs})`, fn)
    else it(name, fn, options.timeout)
  }
  return {
    setup,
    has: (capability) => !without.has(capability),
    test: (name, fn, needs) =>
      register(name, needs, async () => {
        const h = await setup()
        try {
          if (needs) expectCapability(h.adapter, needs)
          await fn(h)
        } finally {
          await h.teardown()
        }
      }),
    own: (name, fn, needs) => register(name, needs, fn),
  }
}
