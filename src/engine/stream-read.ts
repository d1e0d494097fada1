// A read of a stream (DESIGN §16), its body made here, beside the log: a JSON stream's messages
// (a session's: its events) as the JSON array the protocol answers, a bytes stream's chunks
// joined. One string (or one byte array) goes back to the handler instead of an object an event;
// a JSON stream's messages are cut from the events' stored texts, unparsed. And what a fork
// reads of its source: where it parts, and the events it is seeded with.
import { fromBase64, toBase64 } from '../core/base64'
import type { SessionEvent, SessionId } from '../core/model'
import type { StreamMode } from '../core/streams'
import { encodeEvent, type EncodedEvent } from '../core/validate'
import type { StoreReader } from './reader'

/** Events `[from, to)` of `id`, up to about `maxBytes` of body (one event at least): how many, and the body. */
export async function readBody(
  reader: Pick<StoreReader, 'pages' | 'texts'>,
  id: SessionId,
  mode: StreamMode,
  from: number,
  to: number,
  maxBytes: number,
  events?: { read(event: SessionEvent): SessionEvent },
): Promise<{ count: number; body: string | Uint8Array }> {
  const texts: string[] = []
  const chunks: Uint8Array[] = []
  let bytes = 0
  let count = 0
  if (from < to && mode === 'json') {
    // A message is its event's data: cut from the event's text (`data` comes last), not parsed and made again.
    read: for await (const page of reader.texts(id, { from, to })) {
      for (const text of page) {
        if (count > 0 && bytes >= maxBytes) break read
        count++
        const data = text.slice(text.indexOf(',"data":') + 8, -1)
        texts.push(data)
        bytes += data.length
      }
    }
  } else if (from < to) {
    read: for await (const page of reader.pages(id, { from, to })) {
      for (const e of page) {
        if (count > 0 && bytes >= maxBytes) break read
        count++
        if (mode === 'bytes') {
          const chunk = fromBase64(e.data as string)
          chunks.push(chunk)
          bytes += chunk.byteLength
          continue
        }
        // A session's event as reads hand it over: at its type's latest version (event-registry.ts).
        const { seq, type, data, time, v } = events ? events.read(e) : e
        const text = JSON.stringify(v === undefined ? { seq, type, data, time } : { seq, type, data, time, v })
        texts.push(text)
        bytes += text.length
      }
    }
  }
  if (mode !== 'bytes') return { count, body: `[${texts.join(',')}]` }
  const out = new Uint8Array(bytes)
  let at = 0
  for (const chunk of chunks) {
    out.set(chunk, at)
    at += chunk.byteLength
  }
  return { count, body: out }
}

/**
 * Where a fork parts from `id` at position `at` and `sub` past it: JSON messages are events,
 * so `whole` is `at + sub`; bytes are counted through the events from `at`, and a part of an
 * event is `rest` (base64), the fork's own first event. Undefined past the source's end.
 */
export async function forkPart(
  reader: Pick<StoreReader, 'pages'>,
  id: SessionId,
  mode: StreamMode,
  at: number,
  sub: number,
  length: number,
): Promise<{ whole: number; rest?: string } | undefined> {
  if (mode !== 'bytes' || sub === 0) return at + sub <= length ? { whole: at + sub } : undefined
  let left = sub
  let whole = at
  for await (const page of reader.pages(id, { from: at, to: length })) {
    for (const e of page) {
      const bytes = fromBase64(e.data as string)
      if (left < bytes.length) return { whole, rest: toBase64(bytes.subarray(0, left)) }
      left -= bytes.length
      whole++
      if (left === 0) return { whole }
    }
  }
  return undefined
}

/** The first `to` events of `id`, to seed a fork. */
export async function eventsTo(reader: Pick<StoreReader, 'pages'>, id: SessionId, to: number): Promise<EncodedEvent[]> {
  const out: EncodedEvent[] = []
  if (to === 0) return out
  for await (const page of reader.pages(id, { from: 0, to })) for (const e of page) out.push(encodeEvent(e, id, Number.MAX_SAFE_INTEGER))
  return out
}
