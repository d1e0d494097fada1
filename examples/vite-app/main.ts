// A web app that bundles sessionfold with Vite: `import { openStore } from 'sessionfold'`, and
// the engine's worker comes with the package (nothing to copy by hand).
import { openStore } from 'sessionfold'

const status = document.querySelector('#status')!
const list = document.querySelector('#children')!

const store = await openStore({ name: 'vite-app' }) // IndexedDB, engine in a module Web Worker
const session = await store.createSession()
session.projections.subscribe('subagentCatalog', (catalog) => {
  list.replaceChildren(...(catalog ?? []).map((c) => Object.assign(document.createElement('li'), { textContent: `${c.label} (${c.mode})` })))
})
for (const label of ['planner', 'coder', 'reviewer']) {
  const child = await session.spawn({ mode: 'continuable', label })
  await child.append([{ type: 'turn/start' }, { type: 'turn/end' }])
}
status.textContent = `ready: ${session.projections.get('subagentCatalog')?.length} children, asOfSeq ${session.projections.snapshot().asOfSeq}`
