// What bench/opfs.ts (Node) and bench/opfs/page.ts (the page) share: the systems, the workloads,
// the settings going in and a run's figures coming out. Statistics are computed in Node.

/**
 * opfs: openStore({ storage: 'opfs' }); idb: openStore() on IndexedDB; dexie: Dexie 4 with its
 * defaults; dexieStrict: Dexie 4 with chromeTransactionDurability 'strict'; raw: sync access
 * handle write + flush of the same bytes in a dedicated worker (the physical limit).
 */
export const SYSTEMS = ['opfs', 'idb', 'dexie', 'dexieStrict', 'raw'] as const
export type SystemKey = (typeof SYSTEMS)[number]

/** batched: appends of `batch` events, each awaited; single: one-event appends, each awaited. */
export const WORKLOADS = ['batched', 'single'] as const
export type Workload = (typeof WORKLOADS)[number]

export interface PageConfig {
  /** Unique part of the store, database and folder names. */
  stamp: string
  /** The event appended everywhere (bench/common.ts messageInput), as JSON. */
  inputJson: string
  /** 'batched': events per run, and per append. */
  events: number
  batch: number
  /** 'single': appends per run. */
  singles: number
  /** Untimed appends before each run's timed ones: batches ('batched'), single events ('single'). */
  primeBatches: number
  primeSingles: number
  /** Idle ms before each run (IndexedDB compacts what the last run wrote, and deleted, in the background). */
  settleMs: number
}

export interface RunResult {
  /** Events appended in the timed part, and its ms. */
  events: number
  ms: number
  /** ms of opening the store or database (untimed for the rate), and of closing and deleting it after. */
  openMs: number
  cleanupMs: number
}

export interface OpfsPage {
  info(): { userAgent: string; hardwareConcurrency: number; opfs: boolean }
  /** Takes the settings; the mean JSON bytes of a stored event ({ seq, type, time, data }). */
  setup(cfg: PageConfig): { eventJsonBytes: number }
  /** One run of `system` on `workload` in a new store named after `tag`, deleted after it. */
  run(system: SystemKey, workload: Workload, tag: string): Promise<RunResult>
  /** What this benchmark left behind: IndexedDB databases and OPFS entries named after the stamp. */
  leftovers(): Promise<string[]>
  warnings(): string[]
}
