// Appends to one stream that arrive while its write is under way go out together (streams.ts):
// one writer lock, one record write and one log write for all of them. The ones of a producer go
// in the order of their Producer-Seq (requests sent at once arrive in any order), and one that
// comes before those it follows waits a moment for them rather than answer 409 at once.
import type { StreamAnswer, StreamRequest } from '../core/streams'

/** Appends that go out together at most (one lock, one record write, one log write). */
export const MAX_BATCH = 256

export type Append = Extract<StreamRequest, { op: 'append' }>

/** Puts each producer's appends of `batch` in the order of their Producer-Seq, in the places they had. */
export function inProducerOrder(batch: Queued[]): void {
  const places = new Map<string, number[]>()
  for (const [i, { request }] of batch.entries()) {
    if (!request.producer) continue
    const key = JSON.stringify(request.producer.slice(0, 2))
    places.set(key, [...(places.get(key) ?? []), i])
  }
  for (const at of places.values()) {
    if (at.length < 2) continue
    const items = at.map((i) => batch[i]!).sort((a, b) => a.request.producer![2] - b.request.producer![2])
    for (const [k, i] of at.entries()) batch[i] = items[k]!
  }
}

/**
 * A producer's append that came before the ones it follows (HTTP requests sent at once arrive in
 * any order) waits this long for them, tried again every GAP_PAUSE_MS, before its 409 goes out.
 */
export const GAP_WAIT_MS = 500
export const GAP_PAUSE_MS = 5

/** An append waiting for its turn, and its caller. */
export interface Queued {
  request: Append
  resolve(answer: StreamAnswer): void
  reject(err: unknown): void
  /** Set at its first gap (see GAP_WAIT_MS). */
  gapUntil?: number
}
