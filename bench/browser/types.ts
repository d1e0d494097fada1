// What bench/browser/run.ts (Node) and bench/browser/bench.ts (the page) exchange: the
// settings going in, the raw samples coming out. Statistics are computed in Node.

export interface BrowserBenchConfig {
  /** Events per append run, sessionfold and raw idb. */
  events: number
  /** Events per append call / per raw transaction. */
  batch: number
  /** Target JSON size of one appended event (seq, type, time, data). */
  eventBytes: number
  /** Recorded rounds of the append comparison (after one unrecorded warm-up round). */
  appendRounds: number
  /** Idle time before each append run (background compaction of the last run settles). */
  settleMs: number
  /** Latency scenarios, run one after another. */
  scenarios: LatencyScenarioConfig[]
  /** Recorded rounds per latency scenario (after one unrecorded warm-up round). */
  latencyRounds: number
  /** Samples per system per round. */
  samplesPerBlock: number
  /** Idle time after each latency sample (longer than the mirror's 5 ms notify interval). */
  gapMs: number
  /** Events per prefill call: session.append(array) for sessionfold, bulkAdd for Dexie. */
  prefillBatch: number
  /** Unique suffix for database names. */
  stamp: string
  /** Which parts run (all by default): 'appends', 'catalog', 'latency'. */
  phases: BenchPhase[]
  /** The catalog figure: a catalog fact at two catalog sizes (see CatalogResult). */
  catalog: CatalogConfig
}

export const BENCH_PHASES = ['appends', 'catalog', 'latency'] as const
export type BenchPhase = (typeof BENCH_PHASES)[number]

export interface CatalogConfig {
  /** Catalog entries before the samples: the small and the large session. */
  small: number
  large: number
  /** Samples per run (one run: one session, one size); a run's figure is their median. */
  samples: number
  /** Recorded rounds (after one unrecorded warm-up round); each round runs both sizes. */
  rounds: number
  /** recordExternal calls in flight at once while filling a catalog (untimed). */
  fillChunk: number
  /** Pause after each sample, once the writer has it: each sample finds the store quiet. */
  paceMs: number
}

export interface LatencyScenarioConfig {
  name: string
  /** Events in the session before sampling starts. */
  prefill: number
  /** Every n-th prefilled event is a catalog fact (1: all of them); the rest are ~300-byte messages. */
  catalogEvery: number
  /** Reference scenarios carry no target. */
  reference: boolean
}

/** The latency systems: each sample is one appended catalog fact. */
export const LATENCY_SYSTEMS = [
  /** sessionfold: until the writing handle's subscribe('subagentCatalog') listener sees the entry. */
  'sfWriter',
  /** The same append: until an observer handle (store.observe(id), same store) sees it. */
  'sfObserver',
  /** The same append: until session.append() resolves (durable and reflected in the writer's mirror). */
  'sfAppend',
  /** A separate block: an observer in a second store (its own worker, as another tab has). */
  'sfOtherStore',
  /** Dexie liveQuery, default options (cache 'immutable': optimistic, shown before commit). */
  'dexie',
  /** The same add: until db.events.add() resolves (committed, strict). */
  'dexieAdd',
  /** Dexie liveQuery with cache 'disabled': re-queried after commit. */
  'dexieNoCache',
  /** Raw idb: one put in a strict readwrite transaction, until tx.done (the commit floor). */
  'idbPut',
  /** Raw idb, the shape of sessionfold's append transaction: get the meta row, put the event and the meta row. */
  'idbAppendTx',
] as const
export type LatencySystem = (typeof LATENCY_SYSTEMS)[number]

export interface LatencyScenarioResult {
  name: string
  prefill: number
  catalogEvery: number
  reference: boolean
  /** Catalog entries when sampling started. */
  catalogAtStart: number
  /** Mean JSON bytes of a prefilled event. */
  prefillEventBytes: number
  /** Prefill time in ms, per system (informational). */
  prefillMs: { sessionfold: number; dexie: number; dexieNoCache: number }
  /** Latency samples in ms: rounds[r][system] = samples of that round. */
  rounds: Record<LatencySystem, number[]>[]
  /**
   * Main-thread cost of one pushed frame holding the session's current values, measured in the
   * page after sampling (median of several runs, ms): the client's frame check (frameProblem:
   * the built-in views' schemas and a plain-JSON walk), and a structured clone of the values
   * (what postMessage does, on both sides).
   */
  frameCost: { catalogEntries: number; validateMs: number; cloneMs: number }
}

export interface BrowserBenchResults {
  userAgent: string
  /** Mean JSON bytes of an appended event (when the appends phase ran). */
  eventJsonBytes?: number
  /** When the appends phase ran. */
  appends?: {
    /** events/s per recorded round. */
    sessionfold: number[]
    idb: number[]
    /** Reference: sessionfold with checkpoints deferred past the run. */
    sessionfoldDeferred: number[]
    /** The order of each recorded round. */
    order: string[]
  }
  /** Empty when the latency phase did not run. */
  latency: LatencyScenarioResult[]
  /** The catalog figure, when that phase ran. */
  catalog?: CatalogResult
  /** console.warn/error seen in the page during the run. */
  warnings: string[]
}

export type BenchEntry = (config: BrowserBenchConfig) => Promise<BrowserBenchResults>

/**
 * Issue 14's catalog figure, through the page's openStore() (the engine in its Web Worker,
 * IndexedDB, strict): a catalog fact (session.recordExternal({ childId })) appended to a
 * session whose catalog holds `large` entries against one holding `small`, timed from the
 * call until the writer's own mirror (session.projections.get('subagentCatalog')) holds it.
 */
export interface CatalogResult {
  /** Per recorded round, the median of the run's samples (ms). */
  small: number[]
  large: number[]
  /** Every sample of the recorded rounds (ms), for the spread. */
  smallSamples: number[]
  largeSamples: number[]
  /** Catalog length at the start of each recorded run. */
  lengths: { small: number[]; large: number[] }
  /** Filling the large catalog (untimed for the figure): ms. */
  fillMs: number
  /** The order of each recorded round. */
  order: string[]
}
