// Fixture: QuotaExceededError injected into real IndexedDB, switched over a BroadcastChannel (quota.browser.test.ts)
// A full IndexedDB quota injected into real Chromium's IndexedDB, in whichever context runs
// the engine (the page with worker: false, the Web Worker of quota-worker.ts otherwise): while
// "full", the second put/add of every transaction throws QuotaExceededError, after the first
// was issued (so the adapter must abort what it already started). Switched over a
// BroadcastChannel, each context acknowledging under its own name.
const CHANNEL = 'sessionfold-test-quota'

export function installQuotaFault(context: string): void {
  let full = false
  const channel = new BroadcastChannel(CHANNEL)
  channel.onmessage = (e: MessageEvent<{ full?: boolean; id?: string; to?: string }>) => {
    if (e.data.to !== context) return
    full = e.data.full === true
    channel.postMessage({ ack: e.data.id })
  }
  const proto = IDBObjectStore.prototype
  const counts = new WeakMap<IDBTransaction, number>()
  for (const method of ['put', 'add'] as const) {
    const original = proto[method]
    proto[method] = function (this: IDBObjectStore, ...args: Parameters<typeof original>) {
      const n = (counts.get(this.transaction) ?? 0) + 1
      counts.set(this.transaction, n)
      if (full && n === 2) throw new DOMException('quota reached (injected)', 'QuotaExceededError')
      return original.apply(this, args)
    }
  }
}

/** Turns the fault on or off in `context`, once it has acknowledged. */
export async function setFull(context: string, full: boolean): Promise<void> {
  const channel = new BroadcastChannel(CHANNEL)
  const id = Math.random().toString(36).slice(2)
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ack from ${context}`)), 5000)
      channel.onmessage = (e: MessageEvent<{ ack?: string }>) => {
        if (e.data.ack !== id) return
        clearTimeout(timer)
        resolve()
      }
      channel.postMessage({ full, id, to: context })
    })
  } finally {
    channel.close()
  }
}
