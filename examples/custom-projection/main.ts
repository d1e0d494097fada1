// examples/custom-projection/main.ts
import { openStore } from 'sessionfold'
import './token-count' // for its ProjectionMap type

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
console.log(session.projections.get('tokenCount')) // { total: 1545, turns: 2 }
await store.close()
