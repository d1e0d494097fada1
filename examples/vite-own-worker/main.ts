// examples/vite-own-worker/main.ts
import { openStore } from 'sessionfold'
import type { TokenCount } from '../custom-projection/token-count' // its ProjectionMap entry, and none of its code

const store = await openStore({
  name: 'vite-own-worker',
  // The pattern bundlers ship as a worker: worker.ts, with your units, becomes a file of its own.
  worker: () => new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' }),
})
const session = await store.createSession()
session.projections.subscribe('tokenCount', (count) => {
  document.querySelector('#tokens')!.textContent = `${count?.total ?? 0} tokens in ${count?.turns ?? 0} turns`
})
await session.append([
  { type: 'llm/usage', data: { tokens: 1200 } },
  { type: 'llm/usage', data: { tokens: 345 } },
])
// Checked by the event's definition in the worker: refused, nothing written.
const refused = await session.append({ type: 'llm/usage', data: { tokens: -1 } }).catch((err: { code?: string }) => err.code)
document.querySelector('#refused')!.textContent = `tokens: -1 was ${refused}`
const count: TokenCount | null = session.projections.get('tokenCount')
document.querySelector('#status')!.textContent = `ready: ${count?.total} tokens, asOfSeq ${session.projections.snapshot().asOfSeq}`
