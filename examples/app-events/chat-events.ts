// examples/app-events/chat-events.ts
import { defineEvent, defineProjection } from 'sessionfold'
import { z } from 'zod'

// The first version of the app stored a message as { text }; the second says who wrote it.
const messageV1 = z.object({ text: z.string() })
const messageV2 = z.object({ role: z.enum(['user', 'assistant']), text: z.string() })

export const chatMessage = defineEvent({
  type: 'chat/message',
  versions: [messageV1, { schema: messageV2, up: (v1) => ({ role: 'user' as const, text: v1.text }) }],
})

const lines = z.array(messageV2)
export type Transcript = z.infer<typeof lines>

export const transcript = defineProjection({
  key: 'transcript',
  stateVersion: 1,
  stateSchema: lines,
  types: ['chat/message'], // handed only these, each at its latest version, `data` typed
  init: () => [],
  apply: (messages, event) => [...messages, { role: event.data.role, text: event.data.text }],
  view: { schema: lines, view: (messages) => messages },
})

// Types append({ type: 'chat/message', data }) and get('transcript') everywhere in the app.
declare module 'sessionfold' {
  interface EventMap {
    'chat/message': z.infer<typeof messageV2>
  }
  interface ProjectionMap {
    transcript: Transcript
  }
}
