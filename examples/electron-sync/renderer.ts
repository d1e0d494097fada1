// examples/electron-sync/renderer.ts
// A renderer: its own IndexedDB store (in a real renderer, openStore() runs the engine in a
// Web Worker), its own agents, and the same link to the main process over a MessagePort.
// It can observe the main process's sessions: imported events reach open handles live.
import { openStore } from 'sessionfold'
import { runAgent, type Side } from './agent'
import { linkStore, type Port } from './link'

export async function startRenderer(name: string, port: Port, options: { worker?: boolean } = {}): Promise<Side> {
  const store = await openStore({ storage: 'indexeddb', name, worker: options.worker ?? true })
  return { store, link: linkStore(store, port), runAgent: (id, n) => runAgent(store, id, n) }
}
