// The chat's own events and the transcript folded from them, declared once, here. The worker
// (worker.ts) registers both: the engine checks every append against these schemas, hands every
// read at the latest version, and folds the transcript. The page imports this file for its
// types only (`import type`): EventMap types its appends, ProjectionMap its reads.
import { type EventDataOfDefinition, defineEvent, defineProjection } from 'sessionfold'
import { z } from 'zod'

// user/message. The first version of the app stored { text } and showed it as typed. The
// second renders a little Markdown (chat-pane.ts), so a message says which it is: an old one
// reads as 'plain', or the `**` someone typed back then would turn bold now.
const userMessageV1 = z.object({ text: z.string() })
const userMessageV2 = z.object({ text: z.string(), format: z.enum(['plain', 'markdown']) })

export const userMessage = defineEvent({
  type: 'user/message',
  versions: [userMessageV1, { schema: userMessageV2, up: (v1) => ({ text: v1.text, format: 'plain' as const }) }],
})

/** A piece of the assistant's reply, appended as the model streams it (assistant.ts). */
export const assistantDelta = defineEvent({ type: 'assistant/delta', schema: z.object({ text: z.string() }) })

/** The reply is complete: no data. */
export const assistantDone = defineEvent({ type: 'assistant/done', schema: z.null() })

export const chatEvents = [userMessage, assistantDelta, assistantDone]

const message = z.object({
  /** The seq of its first event: stable, so React keeps the row while a reply grows. */
  key: z.number(),
  role: z.enum(['user', 'assistant']),
  text: z.string(),
  format: z.enum(['plain', 'markdown']),
  /** An assistant reply still streaming (or one whose writer stopped mid-way). */
  open: z.boolean(),
})
const messages = z.array(message)
export type Message = z.infer<typeof message>

/**
 * The chat's messages: deltas join the reply they continue, one message that grows, as the
 * user expects. The state is the view itself, so nothing is computed twice.
 *
 * Cost: a view is checked against its schema and pushed to every handle whenever it changes.
 * A list that only grew (a new message) is checked and sent by its new items; a delta changes
 * the last message, so the whole list is checked and sent again, once per batch of deltas the
 * worker folds together. Cheap for a chat of a few hundred messages (hence a plain
 * `z.array(z.object(…))`, no refinements). For very long chats, fold the reply being streamed
 * into a unit of its own, so that this list only grows.
 */
export const transcript = defineProjection({
  key: 'chatTranscript',
  // Bump it whenever the state's meaning changes: checkpoints of other versions are ignored,
  // and the unit refolds from the log.
  stateVersion: 1,
  stateSchema: messages,
  // Handed only these, each at its latest version: `event.data` is typed by `event.type`.
  types: ['user/message', 'assistant/delta', 'assistant/done'],
  init: (): Message[] => [],
  apply(list, event): Message[] {
    const last = list.at(-1)
    const growing = last?.role === 'assistant' && last.open ? last : undefined
    switch (event.type) {
      case 'user/message':
        // Version 1's events come here upcast: `format` is always there.
        return [...list, { key: event.seq, role: 'user', text: event.data.text, format: event.data.format, open: false }]
      case 'assistant/delta':
        if (growing) return [...list.slice(0, -1), { ...growing, text: growing.text + event.data.text }]
        return [...list, { key: event.seq, role: 'assistant', text: event.data.text, format: 'plain', open: true }]
      case 'assistant/done':
        return growing ? [...list.slice(0, -1), { ...growing, open: false }] : list // the same reference: nothing changed
    }
  },
  view: { schema: messages, view: (list) => list },
})

// Types append({ type: 'user/message', data }) and the others (each at its latest version), and
// get('chatTranscript') and subscribe('chatTranscript', …), everywhere in the app.
declare module 'sessionfold' {
  interface EventMap {
    'user/message': EventDataOfDefinition<typeof userMessage>
    'assistant/delta': EventDataOfDefinition<typeof assistantDelta>
    'assistant/done': EventDataOfDefinition<typeof assistantDone>
  }
  interface ProjectionMap {
    chatTranscript: Message[]
  }
}
