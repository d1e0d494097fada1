// Contract: §18 OPFS in browsers — the client suite on the origin's private file system in Chromium (docs/CONTRACT.md)
// The client suite on storage 'opfs' in Chromium, the engine in its module Web Worker (the only
// place with sync access handles), and openStore refusing 'opfs' where there are none.
import { describe, expect, it } from 'vitest'
import { openStore } from 'sessionfold'
import { clientConformance } from '../contract/client'

let n = 0
const name = () => `opfs-client-${Date.now()}-${n++}`
clientConformance('Chromium, OPFS, module Web Worker', () => ({ storage: 'opfs', name: name(), worker: true }))

describe("storage 'opfs' where there are no sync access handles", () => {
  for (const worker of [false, 'shared'] as const) {
    it(`openStore({ worker: ${JSON.stringify(worker)} }) rejects with STORAGE_UNAVAILABLE, naming why, and makes nothing`, async () => {
      const store = `opfs-refused-${Date.now()}-${n++}`
      const err = await openStore({ storage: 'opfs', name: store, worker }).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(err).toMatchObject({ code: 'STORAGE_UNAVAILABLE' })
      expect(String((err as Error).message)).toMatch(/dedicated worker/)
      const top = await navigator.storage.getDirectory()
      const names: string[] = []
      for await (const key of (top as FileSystemDirectoryHandle & { keys(): AsyncIterable<string> }).keys()) names.push(key)
      expect(names).not.toContain(store)
    })
  }
})
