// The default engine worker (built-in units only) with counters on its IndexedDB
// transactions, for the benchmark's untimed diagnostics pass: how many transactions of which
// kind an append run makes, and how long they take from creation to `complete`. The page asks
// for the figures over a BroadcastChannel.
import { serveEngine } from 'sessionfold/worker'
import { COUNTS_CHANNEL, type TxCount } from './types'

const counts: Record<string, TxCount> = {}
const original = IDBDatabase.prototype.transaction
IDBDatabase.prototype.transaction = function (
  this: IDBDatabase, stores: string | string[], mode?: IDBTransactionMode, options?: IDBTransactionOptions,
): IDBTransaction {
  const tx = original.call(this, stores, mode, options)
  const key = `${[stores].flat().join('+')} ${mode ?? 'readonly'}${options?.durability ? ` (${options.durability})` : ''}`
  const entry = (counts[key] ??= { count: 0, ms: 0 })
  entry.count++
  const t0 = performance.now()
  tx.addEventListener('complete', () => (entry.ms += performance.now() - t0))
  return tx
}

const channel = new BroadcastChannel(COUNTS_CHANNEL)
channel.onmessage = (event: MessageEvent) => {
  if (event.data === 'reset') for (const key of Object.keys(counts)) delete counts[key]
  if (event.data === 'report') channel.postMessage({ counts: structuredClone(counts) })
}

void serveEngine()
