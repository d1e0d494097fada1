// A dedicated worker holding OPFS adapters for opfs-storage.browser.test.ts, which runs the
// storage conformance suite in the page: sync access handles exist only in a dedicated worker,
// so the page's adapter is a stand-in that calls this one (each call, one message).
import './vitest-worker'
import { openOpfsStorage } from '../../src/backends/opfs/backend'
import { recordsOf } from '../../src/storage/records'
import type { StorageAdapter } from '../../src/storage/types'

interface Request {
  id: number
  op: 'open' | 'call' | 'remove'
  name?: string
  durability?: 'strict' | 'relaxed'
  path?: string[]
  args?: unknown[]
}

let adapter: StorageAdapter | undefined

async function handle({ op, name, durability, path, args }: Request): Promise<unknown> {
  if (op === 'open') {
    adapter = await openOpfsStorage(name!, durability ?? 'strict')
    return undefined
  }
  if (op === 'remove') {
    await (await navigator.storage.getDirectory()).removeEntry(name!, { recursive: true }).catch(() => {})
    return undefined
  }
  // 'records': the adapter's whole key-value records (the store's rows among them), as the suite reads them.
  let target = (path![0] === 'records' ? { records: recordsOf(adapter!) } : adapter) as unknown as Record<string, unknown>
  for (const key of path!.slice(0, -1)) target = target[key] as Record<string, unknown>
  const result = (target[path!.at(-1)!] as (...a: unknown[]) => unknown).apply(target, args!)
  if (result && typeof result === 'object' && Symbol.asyncIterator in result) {
    const pages: unknown[] = []
    for await (const page of result as AsyncIterable<unknown>) pages.push(page)
    return { pages }
  }
  return await result
}

self.onmessage = async (event: MessageEvent<Request>) => {
  const { id } = event.data
  try {
    self.postMessage({ id, ok: true, value: await handle(event.data) })
  } catch (err) {
    const e = err as { name?: string; message?: string; code?: unknown; sessionId?: unknown; seq?: unknown }
    self.postMessage({ id, ok: false, error: { name: e.name, message: e.message, code: e.code, sessionId: e.sessionId, seq: e.seq } })
  }
}
