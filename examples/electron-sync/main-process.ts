// examples/electron-sync/main-process.ts
// Electron's main process: sessions on disk (an fs store, its engine in a worker thread), an
// agent that spawns subagents, and a link to a renderer over a MessagePortMain.
import { openStore } from 'sessionfold'
import { runAgent, type Side } from './agent'
import { linkStore, type Port } from './link'

export async function startMain(dir: string, port: Port): Promise<Side> {
  const store = await openStore({ storage: 'fs', dir })
  return { store, link: linkStore(store, port), runAgent: (id, n) => runAgent(store, id, n) }
}
