// A read of a stream (DESIGN §16), its body made here, beside the log: a JSON stream's messages
// (a session's: its events) as the JSON array the protocol answers, a bytes stream's chunks
// joined. One string (or one byte array) goes back to the handler instead of an object an event;
// a JSON stream's messages are cut from the events' stored texts, unparsed.
import { fromBase64 } from '../core/base64'
import type { SessionId } from '../core/model'
import type { StreamMode } from '../core/streams'
import type { StoreReader } from './reader'

/** Events `[from, to)` of `id`, up to about `maxBytes` of body (one event at least): how many, and the body. */
export async function readBody(
  reader: Pick<StoreReader, 'pages' | 'texts'>,
  id: SessionId,
  mode: StreamMode,
  from: number,
  to: number,
  maxBytes: number,
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
        const text = JSON.stringify({ seq: e.seq, type: e.type, data: e.data, time: e.time })
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
