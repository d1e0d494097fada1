// examples/app-events/main.ts
import { isSessionfoldError, openStore } from 'sessionfold'
import type {} from './chat-events' // its EventMap and ProjectionMap entries, and none of its code

const store = await openStore({
  dir: process.env.SESSIONFOLD_DIR ?? '.sessionfold',
  workerUrl: new URL('./worker.ts', import.meta.url), // checks and folds run in your worker
})
const chat = await store.createSession()
await chat.append([
  { type: 'chat/message', data: { role: 'user', text: 'Hello?' } },
  { type: 'chat/message', data: { role: 'assistant', text: 'Hi! How can I help?' } },
])
try {
  // The data of the first version: tsc refuses it, and so does the engine.
  await chat.append({ type: 'chat/message', data: { text: 'an old shape' } } as never)
} catch (err) {
  if (!isSessionfoldError(err, 'INVALID_ARGUMENT')) throw err
  console.log('refused:', err.message)
}
console.log(chat.projections.get('transcript')) // [{ role: 'user', text: 'Hello?' }, { role: 'assistant', … }]
for await (const e of chat.events({ types: ['chat/message'] })) console.log(e.seq, e.v, e.data.role, e.data.text)
await store.close()
