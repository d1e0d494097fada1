// A store in memory, opened for an engine: the reference adapter, with the platform's locks
// (in browsers, shared by the tabs that name the same store).
import type { Backend } from '../platform'
import type { MemoryConfig } from './config'
import { createMemoryAdapter } from './index'

export const memoryBackend: Backend<MemoryConfig> = {
  open: async (config, _purpose, platform) => ({ storage: createMemoryAdapter(), ...(await platform.neighbours(config.name)) }),
}
