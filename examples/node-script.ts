// examples/node-script.ts
import { openStore } from 'sessionfold'

const store = await openStore({ dir: process.env.SESSIONFOLD_DIR ?? '.sessionfold' })
const session = await store.createSession({ cwd: process.cwd() })

await session.append({ type: 'turn/start', data: { prompt: 'Summarise README.md' } })
await session.append([
  { type: 'tool/call', data: { tool: 'read_file', path: 'README.md' } },
  { type: 'turn/end', data: { tokens: 812 } },
])

// Synchronous and current: append resolves once this handle's values reflect it.
console.log(session.projections.get('subagentTiming')) // { turns: 1, settledMs: …, runningSince: null }
for await (const event of session.events({ from: 1 })) console.log(event.seq, event.type)
await store.close() // waits for pending appends, writes checkpoints, ends the worker
