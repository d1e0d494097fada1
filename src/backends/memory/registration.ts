// A store in memory: its row in each platform's list of backends (src/backends/node.ts, browser.ts).
import type { BackendEntry } from '../platform'
import { memoryConfig, type MemoryConfig, type MemoryOptions } from './config'

export const memoryStorage: BackendEntry<MemoryConfig, MemoryOptions> = {
  storage: 'memory',
  options: ['name', 'dir'],
  is: 'a memory store keeps nothing',
  config: memoryConfig,
  load: () => import('./backend').then((m) => m.memoryBackend),
}
