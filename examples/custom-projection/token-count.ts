// examples/custom-projection/token-count.ts
import { defineEvent, defineProjection } from 'sessionfold'
import { z } from 'zod'

const usage = z.object({ tokens: z.number().int().nonnegative() })
const state = z.object({ total: z.number(), turns: z.number() })
export type TokenCount = z.infer<typeof state>

// The event it folds, checked where it is appended (the worker registers it): the unit can
// trust its data. See "Your own events" for versions.
export const llmUsage = defineEvent({ type: 'llm/usage', schema: usage })

export const tokenCount = defineProjection({
  key: 'tokenCount',
  stateVersion: 1, // bump it whenever the state's meaning changes: old checkpoints are ignored
  stateSchema: state,
  types: ['llm/usage'], // handed only these: `event.data` is typed by the EventMap entry below
  init: () => ({ total: 0, turns: 0 }),
  apply: (s, event) => ({ total: s.total + event.data.tokens, turns: s.turns + 1 }),
  view: { schema: state, view: (s) => s },
})

// Types `append({ type: 'llm/usage', data })`, `get('tokenCount')` and `subscribe('tokenCount', …)` everywhere in the app.
declare module 'sessionfold' {
  interface EventMap {
    'llm/usage': z.infer<typeof usage>
  }
  interface ProjectionMap {
    tokenCount: TokenCount
  }
}
