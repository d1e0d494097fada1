// examples/custom-projection/main.ts
import { openStore } from 'sessionfold'
import type { TokenCount } from './token-count' // its ProjectionMap entry, and none of its code

const store = await openStore({
  dir: process.env.SESSIONFOLD_DIR ?? '.sessionfold',
  workerUrl: new URL('./worker.ts', import.meta.url), // your units run in your worker
})
const session = await store.createSession()
session.projections.subscribe('tokenCount', (count) => console.log('tokens so far:', count?.total))
await session.append([
  { type: 'llm/usage', data: { tokens: 1200 } },
  { type: 'llm/usage', data: { tokens: 345 } },
])
const count: TokenCount | null = session.projections.get('tokenCount')
console.log(count) // { total: 1545, turns: 2 }
await store.close()
