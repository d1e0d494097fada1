// The default engine worker (built-in units only, zod jitless as src/host/entry/browser.ts has
// it) with counters on its IndexedDB transactions, for the benchmark's untimed diagnostics
// pass: how many transactions of which kind an append run makes, how long they take from
// creation to `complete`, how long each waited before its first request was answered (a
// readwrite transaction whose scope overlaps one still running waits for it), and how the
// append transactions fare when a checkpoint transaction was still running as they were made.
// The page asks for the figures over a BroadcastChannel.
// First, as in the default worker entry: zod parses without compiled code (see the file).
import '../../src/host/entry/zod-jitless'
import { serveEngine } from 'sessionfold/worker'
import { COUNTS_CHANNEL, type TxCount, type TxReport } from './types'

interface Tx {
  kind: string
  created: number
  /** When its first request's result came back: the transaction had started by then. */
  started?: number
  completed?: number
  /** Time spent inside put()/add() calls (they structured-clone the value synchronously). */
  putMs: number
}

let txs: Tx[] = []
const byTx = new WeakMap<IDBTransaction, Tx>()

const original = IDBDatabase.prototype.transaction
IDBDatabase.prototype.transaction = function (
  this: IDBDatabase, stores: string | string[], mode?: IDBTransactionMode, options?: IDBTransactionOptions,
): IDBTransaction {
  const tx = original.call(this, stores, mode, options)
  const record: Tx = {
    kind: `${[stores].flat().join('+')} ${mode ?? 'readonly'}${options?.durability ? ` (${options.durability})` : ''}`,
    created: performance.now(),
    putMs: 0,
  }
  txs.push(record)
  byTx.set(tx, record)
  tx.addEventListener('complete', () => (record.completed = performance.now()))
  return tx
}

// Each request: the first one answered marks its transaction as started; put/add time their clone.
for (const method of ['get', 'getKey', 'getAll', 'getAllKeys', 'put', 'add', 'delete', 'count'] as const) {
  const proto = IDBObjectStore.prototype as unknown as Record<string, (...args: unknown[]) => IDBRequest>
  const inner = proto[method]!
  proto[method] = function (this: IDBObjectStore, ...args: unknown[]): IDBRequest {
    const record = byTx.get(this.transaction)
    const t0 = performance.now()
    const request = inner.apply(this, args)
    if (record) {
      if (method === 'put' || method === 'add') record.putMs += performance.now() - t0
      if (record.started === undefined) request.addEventListener('success', () => (record.started ??= performance.now()))
    }
    return request
  }
}

function report(): TxReport {
  const kinds: Record<string, TxCount> = {}
  const done = txs.filter((t) => t.completed !== undefined)
  for (const t of done) {
    const k = (kinds[t.kind] ??= { count: 0, ms: 0, waitMs: 0, putMs: 0 })
    k.count++
    k.ms += t.completed! - t.created
    k.waitMs! += (t.started ?? t.completed!) - t.created
    k.putMs! += t.putMs
  }
  // Append transactions (they write events), split by whether a checkpoint transaction was
  // still running when they were made; and the time between one append's commit and the next
  // append's transaction: the page's next call, the hop to the worker, validation and the
  // previous batch's fold all happen there.
  const appends = done.filter((t) => t.kind.includes('events') && t.kind.includes('readwrite'))
  const checkpoints = done.filter((t) => t.kind.includes('checkpoints') && t.kind.includes('readwrite'))
  const split = { behindCheckpoint: { count: 0, ms: 0, waitMs: 0, putMs: 0 }, alone: { count: 0, ms: 0, waitMs: 0, putMs: 0 } }
  for (const a of appends) {
    const behind = checkpoints.some((c) => c.created < a.created && c.completed! > a.created)
    const s = behind ? split.behindCheckpoint : split.alone
    s.count++
    s.ms += a.completed! - a.created
    s.waitMs += (a.started ?? a.completed!) - a.created
    s.putMs += a.putMs
  }
  let gapMs = 0
  for (let i = 1; i < appends.length; i++) gapMs += appends[i]!.created - appends[i - 1]!.completed!
  return { kinds, appends: { ...split, gapMs, gaps: Math.max(0, appends.length - 1) } }
}

const channel = new BroadcastChannel(COUNTS_CHANNEL)
channel.onmessage = (event: MessageEvent) => {
  if (event.data === 'reset') txs = []
  if (event.data === 'report') channel.postMessage({ counts: report() })
}

void serveEngine()
