// The default engine worker (built-in units only), except that IndexedDB transactions on the
// `checkpoints` store commit with durability 'relaxed': a what-if for the benchmark's append
// comparison (a checkpoint is a cache of the fold, rebuilt from the log if lost), made by
// patching IDBDatabase.prototype.transaction in this worker only. sessionfold itself is unchanged.
import { serveEngine } from 'sessionfold/worker'

const original = IDBDatabase.prototype.transaction
IDBDatabase.prototype.transaction = function (
  this: IDBDatabase, stores: string | string[], mode?: IDBTransactionMode, options?: IDBTransactionOptions,
): IDBTransaction {
  const relaxed = mode === 'readwrite' && [stores].flat().includes('checkpoints')
  return original.call(this, stores, mode, relaxed ? { ...options, durability: 'relaxed' } : options)
}

void serveEngine()
