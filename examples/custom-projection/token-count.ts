// examples/custom-projection/token-count.ts
import { defineProjection } from 'sessionfold'
import { z } from 'zod'

const usage = z.object({ tokens: z.number().int().nonnegative() })
const state = z.object({ total: z.number(), turns: z.number() })
export type TokenCount = z.infer<typeof state>

export const tokenCount = defineProjection({
  key: 'tokenCount',
  stateVersion: 1, // bump it whenever the state's meaning changes: old checkpoints are ignored
  stateSchema: state,
  init: () => ({ total: 0, turns: 0 }),
  apply(s, event) {
    if (event.type !== 'llm/usage') return s // the same reference: nothing changed
    const parsed = usage.safeParse(event.data)
    return parsed.success ? { total: s.total + parsed.data.tokens, turns: s.turns + 1 } : s
  },
  view: { schema: state, view: (s) => s },
})

// Types `get('tokenCount')` and `subscribe('tokenCount', …)` everywhere in the app.
declare module 'sessionfold' {
  interface ProjectionMap {
    tokenCount: TokenCount
  }
}
