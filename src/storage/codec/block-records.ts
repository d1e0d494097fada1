// The inner adapter's records of a sealed log (sealed-storage.ts): a block's record (its envelope)
// and the pointers of the block's later seqs to it, written out as JSON by hand.
import type { SessionEvent } from '../../core/model'
import { seqEnd, type EncodedEvent } from '../../core/validate'
import type { SkipTexts } from '../types'

const encoder = new TextEncoder()

/**
 * A record of the inner adapter: the block's envelope (data: base64), or a pointer to its first
 * seq. Its JSON is written out: integers and base64 need no escaping, and a batch makes one
 * record per event (JSON.stringify took 0.2 µs each, a tenth of that here).
 */
export function record(seq: number, data: string | number, count = 0): EncodedEvent {
  const event = { seq, type: '', time: count, data }
  return { event, json: `{"seq":${seq},"type":"","time":${count},"data":${typeof data === 'string' ? `"${data}"` : data}}` }
}

/**
 * The UTF-8 bytes of `text`. encodeInto into a buffer of the text's length first (agent JSON
 * is mostly ASCII; Node's TextEncoder.encode took 43 µs for a 30 KB block, this 2 µs), and
 * into one of three bytes an envelope when that did not hold it all.
 */
export function utf8(text: string): Uint8Array {
  const out = new Uint8Array(text.length)
  const { read, written } = encoder.encodeInto(text, out)
  if (read === text.length) return out.subarray(0, written)
  const wide = new Uint8Array(text.length * 3)
  return wide.subarray(0, encoder.encodeInto(text, wide).written)
}

/** Whether `text` (seq `seq`'s) is a record of the codec's: a block's, or a pointer to one. */
export const isBlockText = (text: string, seq: number): boolean => {
  const at = seqEnd(text, seq)
  return at > 0 && text.startsWith(',"type":"",', at)
}

/**
 * The records after a block's own that a reader of texts skips (readTexts' `skip`): its pointers,
 * `time - 1` of them, read from the block record's text. The walk checks the count when it opens
 * the block; other records skip none.
 */
export const skipPointers: SkipTexts = (text, seq) => {
  const at = seqEnd(text, seq)
  if (at < 0 || !text.startsWith(',"type":"","time":', at)) return 0
  const end = text.indexOf(',', at + 18)
  const count = Number(text.slice(at + 18, end))
  return text.startsWith(',"data":"', end) && Number.isInteger(count) && count > 1 ? count - 1 : 0
}

/**
 * The test of texts for pointers to the block from `head`: isPointer's, with the text's end made
 * once a block rather than the whole text once a record (a block's later seqs are all pointers).
 */
export function pointersTo(head: number): (text: string, seq: number) => boolean {
  const end = `,"type":"","time":0,"data":${head}}`
  return (text, seq) => {
    const at = seqEnd(text, seq)
    if (at > 0 && text.length === at + end.length && text.endsWith(end)) return true
    return isPointer(text, seq, head)
  }
}

/** Whether `r` (a record, or its text) is seq `seq`'s pointer to the block from `head`. */
export function isPointer(r: SessionEvent | string, seq: number, head: number): boolean {
  if (typeof r !== 'string') return r.type === '' && r.data === head
  if (r === `{"seq":${seq},"type":"","time":0,"data":${head}}`) return true
  // Written otherwise (the same fields in another order): parsed.
  try {
    return isPointer(JSON.parse(r) as SessionEvent, seq, head)
  } catch {
    return false
  }
}
