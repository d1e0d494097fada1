// A store in IndexedDB, opened for an engine: the adapter, with the platform's locks and growth
// notices (in browsers, shared by the origin's tabs).
import type { Backend } from '../platform'
import type { IndexedDbConfig } from './config'
import { createIndexedDbAdapter } from './index'

export const indexedDbBackend: Backend<IndexedDbConfig> = {
  open: async ({ name, durability }, _purpose, platform) => ({ storage: createIndexedDbAdapter({ name, durability }), ...(await platform.neighbours(name)) }),
}
