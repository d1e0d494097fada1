// examples/browser/main.ts
import { openStore } from 'sessionfold'

// In a browser: IndexedDB storage, the engine in a module Web Worker ('shared': one SharedWorker
// for all tabs of the origin). Bundlers such as Vite bundle the worker from the package itself.
const store = await openStore({ worker: 'shared' })
const session = await store.createSession()
const list = document.querySelector('#children')!

session.projections.subscribe('subagentCatalog', (catalog) => {
  list.replaceChildren(...(catalog ?? []).map((c) => Object.assign(document.createElement('li'), { textContent: `${c.label ?? c.id} (${c.mode})` })))
})
const child = await session.spawn({ mode: 'continuable', label: 'researcher' })
await child.append({ type: 'turn/start' })
