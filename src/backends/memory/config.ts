// openStore's options of a store in memory: none of its own. It keeps nothing anywhere, so it
// takes `name` and `dir` too: an app that switches to memory for its tests keeps its options.
import { storeName } from '../platform'

/** Memory: nothing kept. In browsers, `name` scopes the Web Locks and the growth notices of tabs. */
export interface MemoryConfig {
  storage: 'memory'
  name: string
}

export interface MemoryOptions {
  name?: string
  dir?: string
}

export function memoryConfig(options: MemoryOptions): MemoryConfig {
  storeName(options.dir, 'dir')
  return { storage: 'memory', name: storeName(options.name, 'name') ?? 'sessionfold' }
}
