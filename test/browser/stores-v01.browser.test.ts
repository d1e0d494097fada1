// Reliability: the IndexedDB store of sessionfold 0.1 (database version 2) in real Chromium, the engine in its Web Worker (§2-§13)
// test/fixtures/stores/v0.1/indexeddb.json recreated in the page's own indexedDB, exactly as 0.1
// left it, then opened by today's openStore (a dedicated worker, which shares the origin's
// databases): the checks of test/reliability/stores-v01.test.ts (support/v01-fixtures.ts), the
// upgrade to version 3 included. The fixture files are read through vitest's browser commands
// and parsed with JSON.parse, so their data's odd keys (`__proto__`) stay own keys.
import { commands } from 'vitest/browser'
import { describe, expect } from 'vitest'
import { openStore } from 'sessionfold'
import { idbLayout, loadIdbDump, type IdbDump } from '../support/idb-fixture'
import { v01Suite, type V01Manifest } from '../support/v01-fixtures'

const fixture = async <T>(file: string): Promise<T> => JSON.parse(await commands.readFile(`test/fixtures/stores/v0.1/${file}`)) as T

describe('the IndexedDB store of 0.1 in Chromium (database version 2)', () => {
  const name = `v01-${crypto.randomUUID()}`
  v01Suite(
    () => fixture<V01Manifest>('indexeddb.manifest.json'),
    () => openStore({ storage: 'indexeddb', name }),
    {
      before: async () => {
        await loadIdbDump(indexedDB, name, await fixture<IdbDump>('indexeddb.json'))
        expect(await idbLayout(indexedDB, name)).toEqual({ version: 2, stores: ['checkpoints', 'events', 'feed', 'meta', 'sessions'] })
      },
      after: async () => {
        expect(await idbLayout(indexedDB, name)).toEqual({ version: 3, stores: ['checkpoints', 'events', 'feed', 'kv', 'meta', 'sessions'] })
      },
    },
  )
})
