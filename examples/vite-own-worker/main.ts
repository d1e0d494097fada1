// examples/vite-own-worker/main.ts
import { openStore } from 'sessionfold'
import type { TokenCount } from '../custom-projection/token-count' // its ProjectionMap entry, and none of its code
import type {} from '../app-events/chat-events' // its EventMap and ProjectionMap entries

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
// The app's own event, checked by its definition in the worker: the first version's shape is refused.
await session.append({ type: 'chat/message', data: { role: 'user', text: 'hello' } })
const refused = await session.append({ type: 'chat/message', data: { text: 'an old shape' } } as never).then(
  () => 'accepted',
  (err: { code?: string }) => err.code,
)
const lines = session.projections.get('transcript') ?? []
document.querySelector('#transcript')!.textContent = `${lines.map((m) => `${m.role}: ${m.text}`).join('; ')} (old shape: ${refused})`
const count: TokenCount | null = session.projections.get('tokenCount')
document.querySelector('#status')!.textContent = `ready: ${count?.total} tokens, asOfSeq ${session.projections.snapshot().asOfSeq}`
