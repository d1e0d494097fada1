// Contract: §2 data model, §4 checkpoints, §7 durability, §18 OPFS — the storage suite on the origin's private file system in Chromium (docs/CONTRACT.md)
// The storage conformance suite on the OPFS adapter in Chromium. The adapter lives in a
// dedicated worker (opfs-storage-worker.ts), where sync access handles are; the suite, in the
// page, drives it through a stand-in whose every call is one message to it. A call that reads
// pages (readEvents, readTexts) sends them all back at once; readTexts' `skip` (a function,
// which cannot cross) is left out, which the contract allows (texts of skipped records may be
// given), and a range's signal is checked here.
import { SessionfoldError } from '../../src/core/errors'
import { RECORDS } from '../../src/storage/records'
import type { StorageAdapter } from '../../src/storage/types'
import { storageConformance } from 'sessionfold/testing'

const worker = new Worker(new URL('./opfs-storage-worker.ts', import.meta.url), { type: 'module' })
let nextId = 0
const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>()
worker.onmessage = (event: MessageEvent) => {
  const { id, ok, value, error } = event.data as { id: number; ok: boolean; value?: unknown; error?: Record<string, unknown> }
  const w = waiting.get(id)
  waiting.delete(id)
  if (ok) w?.resolve(value)
  else if (typeof error?.code === 'string')
    w?.reject(
      new SessionfoldError(error.code as never, String(error.message), {
        sessionId: error.sessionId as string | undefined,
        seq: error.seq as number | undefined,
      }),
    )
  else w?.reject(Object.assign(new Error(String(error?.message)), { name: error?.name }))
}

function ask(message: Record<string, unknown>): Promise<unknown> {
  const id = nextId++
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject })
    worker.postMessage({ id, ...message })
  })
}

/** The adapter in the worker, as a StorageAdapter here. */
function standIn(): StorageAdapter {
  const fn =
    (...path: string[]) =>
    (...args: unknown[]) =>
      ask({ op: 'call', path, args })
  // A range's signal cannot cross either: it is checked here, before each page, as the
  // adapter checks it (src/backends/fs/read-events.ts, tested on Node's files).
  const pages = (method: string) =>
    async function* (id: unknown, range?: { signal?: AbortSignal }) {
      const { signal, ...rest } = range ?? {}
      const cancelled = () => new SessionfoldError('CANCELLED', `read of "${String(id)}" cancelled`, { sessionId: String(id) })
      if (signal?.aborted) throw cancelled()
      const { pages } = (await ask({ op: 'call', path: [method], args: [id, range ? rest : undefined] })) as { pages: unknown[] }
      for (const page of pages) {
        if (signal?.aborted) throw cancelled()
        yield page
      }
    }
  return {
    kind: 'fs',
    createSession: fn('createSession'),
    append: fn('append'),
    readEvents: pages('readEvents'),
    readTexts: pages('readTexts'),
    getSession: fn('getSession'),
    listSessions: fn('listSessions'),
    listIds: fn('listIds'),
    deleteSession: fn('deleteSession'),
    feed: { id: fn('feed', 'id'), head: fn('feed', 'head'), read: fn('feed', 'read') },
    replaceRecords: fn('replaceRecords'),
    close: fn('close'),
    getCheckpoint: fn('getCheckpoint'),
    putCheckpoint: fn('putCheckpoint'),
    deleteCheckpoint: fn('deleteCheckpoint'),
    history: { put: fn('history', 'put'), get: fn('history', 'get'), list: fn('history', 'list'), remove: fn('history', 'remove') },
    getMeta: fn('getMeta'),
    putMeta: fn('putMeta'),
    kv: { get: fn('kv', 'get'), put: fn('kv', 'put'), delete: fn('kv', 'delete'), list: fn('kv', 'list') },
    [RECORDS]: Object.fromEntries(['get', 'put', 'delete', 'list', 'getMany', 'writeMany'].map((m) => [m, fn('records', m)])),
  } as unknown as StorageAdapter
}

let n = 0
storageConformance(
  'opfs (Chromium, dedicated worker)',
  async () => {
    const name = `opfs-conformance-${Date.now()}-${n++}`
    await ask({ op: 'open', name })
    const adapter = standIn()
    return {
      adapter,
      reopen: async () => {
        await adapter.close()
        await ask({ op: 'open', name })
        return standIn()
      },
      teardown: async () => {
        await adapter.close().catch(() => {})
        await ask({ op: 'remove', name })
      },
    }
  },
  { timeout: 30_000 },
)
