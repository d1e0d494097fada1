// `subagentTiming`: how many turns ran and how long they took; an own descriptor resets it.
import { z } from 'zod/mini'
import { defineProjection } from '../projection'
import { countSchema, timeSchema } from '../schemas'
import { DESCRIPTOR, TURN_END, TURN_START } from './payloads'

export const timingViewSchema = z.strictObject({
  /** Turns started (`turn/start` events while no turn was running). */
  turns: countSchema,
  /** Time spent in turns that ended, in ms (from the events' `time`). */
  settledMs: timeSchema,
  /** The `time` of the running turn's `turn/start`; `null` between turns. */
  runningSince: z.nullable(z.number()),
})
/**
 * The `subagentTiming` projection: `turns` started (`turn/start`), `settledMs` spent in turns
 * that ended (`turn/end`, by event times), and `runningSince`, the start time of the turn
 * running now (`null` between turns).
 *
 * @useDeclaredType
 */
export type TimingView = z.infer<typeof timingViewSchema>

const stateSchema = z.strictObject({ inherited: countSchema, ...timingViewSchema.shape })
type State = z.infer<typeof stateSchema>

export const subagentTimingUnit = defineProjection<State, TimingView>({
  key: 'subagentTiming',
  types: [TURN_START, TURN_END, DESCRIPTOR],
  stateVersion: 1,
  stateSchema,
  init: (_header, inherited) => ({ inherited, turns: 0, settledMs: 0, runningSince: null }),
  apply(state, event) {
    switch (event.type) {
      case TURN_START:
        // A start while a turn runs is ignored: the running turn keeps its start time.
        return state.runningSince !== null ? state : { ...state, turns: state.turns + 1, runningSince: event.time }
      case TURN_END:
        if (state.runningSince === null) return state
        return { ...state, settledMs: state.settledMs + Math.max(0, event.time - state.runningSince), runningSince: null }
      case DESCRIPTOR:
        if (event.seq < state.inherited) return state
        return state.turns === 0 && state.runningSince === null ? state : { inherited: state.inherited, turns: 0, settledMs: 0, runningSince: null }
      default:
        return state
    }
  },
  view: { schema: timingViewSchema, view: ({ turns, settledMs, runningSince }) => ({ turns, settledMs, runningSince }) },
})
