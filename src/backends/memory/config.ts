// openStore's options of a memory store: none of its own (it keeps nothing anywhere, so it
// takes `name` and `dir` too: an app that switches to memory for its tests keeps its options).

/** Memory: nothing kept. In browsers, `name` scopes the Web Locks and the growth notices of tabs. */
export interface MemoryConfig {
  storage: 'memory'
  name: string
}

export function memoryConfig(options: { name?: string }): MemoryConfig {
  return { storage: 'memory', name: options.name ?? 'sessionfold' }
}
