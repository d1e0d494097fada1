// A store in IndexedDB: its row in each platform's list of backends (src/backends/browser.ts,
// and node.ts, where it runs on an IndexedDB polyfill).
import type { BackendEntry } from '../platform'
import { indexedDbConfig, type IndexedDbConfig, type IndexedDbOptions } from './config'

export const indexedDbStorage: BackendEntry<IndexedDbConfig, IndexedDbOptions> = {
  storage: 'indexeddb',
  options: ['name'],
  is: 'an IndexedDB store is the database `name`',
  config: indexedDbConfig,
  load: () => import('./backend').then((m) => m.indexedDbBackend),
}
