// The Quick start demo: a session on the embedded default store (files under .sessionfold/),
// a few events appended durably, and the log read back.
import { createFsAdapter } from '../adapters/fs'
import type { SessionHeader } from '../src/model'
import { encodeEventInput } from '../src/validate'

const store = createFsAdapter({ dir: '.sessionfold' })
const id = `demo-${Date.now().toString(36)}`
const header: SessionHeader = { version: 1, id, createdAt: Date.now(), cwd: process.cwd(), seedLength: 0, delegationDepth: 0, origin: 'root' }
await store.createSession(header)

const inputs = [
  { type: 'turn/start', data: { prompt: 'Summarise the repository' } },
  { type: 'agent/message', data: { text: 'Reading README.md and package.json…' } },
  { type: 'tool/call', data: { tool: 'read_file', path: 'README.md' } },
  { type: 'turn/end', data: { tokens: 1234 } },
]
// Validated and encoded once each; the batch is durable (fdatasync'ed) when append resolves.
await store.append(id, inputs.map((input, i) => encodeEventInput(input, i, id)))

console.log(`session ${id} in .sessionfold/ (${(await store.getSession(id))?.length} events):`)
for await (const page of store.readEvents(id)) {
  for (const e of page) console.log(`  #${e.seq} ${new Date(e.time).toISOString()} ${e.type} ${JSON.stringify(e.data)}`)
}
const sessions = await store.listSessions({ limit: 1000 })
console.log(`the store holds ${sessions.length} session(s)`)
await store.close()
