// The realistic session log the benchmarks fold: turns of `turnLength` events (turn/start
// first, turn/end last), a catalog fact every `catalogEvery` events before `catalogUntil`
// (some continuable, with a label), and app events of about `eventBytes` of JSON in between.
// Event `seq` is a pure function of its settings, so a log of any length is made on demand.
import type { Json, SessionEvent, SessionHeader, SessionId } from '../src/core/model'
import { CATALOG, TURN_END, TURN_START } from '../src/core/units/payloads'

export const TIME0 = 1_700_000_000_000
const WORDS = 'the agent read the file and proposed a patch to the parser so that the tests pass again '
const APP_TYPES = ['message/assistant', 'tool/call', 'tool/result', 'message/user'] as const

export interface LogShape {
  eventBytes: number
  turnLength: number
  catalogEvery: number
  /** No catalog facts at or after this seq (default: none stop). */
  catalogUntil?: number
}

export function rootHeader(id: SessionId): SessionHeader {
  return { version: 1, id, createdAt: TIME0, seedLength: 0, delegationDepth: 0, origin: 'root' }
}

/** `eventAt(seq)` for logs of this shape. */
export function logModel(shape: LogShape): (seq: number) => SessionEvent {
  const { turnLength, catalogEvery, catalogUntil = Infinity } = shape
  // Per app type, the text that makes an event with a 5-digit seq encode to `eventBytes` of JSON.
  const pads = new Map(
    APP_TYPES.map((type) => {
      const base = JSON.stringify({ seq: 10_000, type, time: TIME0, data: { role: 'agent', text: '' } }).length
      const n = shape.eventBytes - base
      return [type, WORDS.repeat(Math.ceil(n / WORDS.length)).slice(0, n)]
    }),
  )
  return (seq) => {
    const time = TIME0 + seq * 10
    const inTurn = seq % turnLength
    const turn = Math.floor(seq / turnLength)
    if (inTurn === 0) return { seq, type: TURN_START, time, data: { turn } }
    if (inTurn === turnLength - 1) return { seq, type: TURN_END, time, data: { turn, inputTokens: 18_211, outputTokens: 1_403 } }
    if (seq % catalogEvery === 7 && seq < catalogUntil) {
      const data: { [k: string]: Json } = { v: 2, childId: `child-${seq}`, childCreatedAt: time, mode: 'one-shot' }
      if (seq % 3 === 0) {
        data.mode = 'continuable'
        data.label = `worker-${seq}`
      }
      return { seq, type: CATALOG, time, data }
    }
    const type = APP_TYPES[seq % APP_TYPES.length]!
    return { seq, type, time, data: { role: 'agent', text: pads.get(type)! } }
  }
}
