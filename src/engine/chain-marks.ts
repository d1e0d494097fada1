// A session's chain marks as stored: a page of up to 64 marks (one every 64 events) per key-value
// record `['session', id, 'chain', <page>]`, with its session's life and a sum, and every stored
// mark of a session read back (verify).
import { isChain, murmur128 } from '../core/chain'
import { isSessionfoldError } from '../core/errors'
import type { SessionHeader, SessionId } from '../core/model'
import type { KeyValueStore } from '../storage/types'

/** Events between marks, and marks per stored page (a page covers 4,096 events, 2 KiB of marks). */
export const MARK_EVERY = 64
export const MARKS_PER_PAGE = 64
export const PAGE_SPAN = MARK_EVERY * MARKS_PER_PAGE

export const pageKey = (id: SessionId, index: number) => ['session', id, 'chain', String(index)]

/**
 * The page format. Version 1's marks could be wrong for a session of an app's versioned events:
 * a writer that caught up from the log hashed each event without its `v` (eventJson left it
 * out). Its pages are passed over as if missing (a cache: the marks are made again from
 * the log, and stored anew by the next writer), not reported as damage.
 */
const PAGE_VERSION = 2

/** A stored page's value: its session's life, its marks (hex, concatenated) and a sum of both. */
export function encodePage(createdAt: number, marks: readonly string[]): string {
  const m = marks.join('')
  return JSON.stringify({ v: PAGE_VERSION, c: createdAt, m, s: sumOf(createdAt, m) })
}

/** Whether `text` is a page of an earlier format (see PAGE_VERSION): outdated, not damaged. */
function outdated(text: string | undefined): boolean {
  try {
    return (JSON.parse(text ?? '') as { v?: unknown } | null)?.v === 1
  } catch {
    return false
  }
}

const encoder = new TextEncoder()
const sumOf = (createdAt: number, m: string) => murmur128(encoder.encode(`${createdAt}:${m}`)).slice(0, 16)

/** A stored page's marks, or undefined when it is not one of this life's (or damaged). */
export function decodePage(text: string | undefined, createdAt: number): string[] | undefined {
  if (text === undefined) return undefined
  try {
    const b = JSON.parse(text) as { v?: unknown; c?: unknown; m?: unknown; s?: unknown }
    if (
      b.v !== PAGE_VERSION ||
      b.c !== createdAt ||
      typeof b.m !== 'string' ||
      b.m.length % 32 !== 0 ||
      b.m.length > 32 * MARKS_PER_PAGE ||
      b.s !== sumOf(createdAt, b.m)
    )
      return undefined
    const marks = b.m.match(/.{32}/g) ?? []
    return marks.every(isChain) ? marks : undefined
  } catch {
    return undefined
  }
}

/**
 * Every mark stored for `header`'s session, by position, and what is wrong with the stored
 * pages (verify): a page that does not open or is not this life's, or one with a gap below it.
 */
export async function storedMarks(
  kv: Pick<KeyValueStore, 'get' | 'list'> | undefined,
  header: SessionHeader,
): Promise<{ values: Map<number, string>; problems: string[] }> {
  const values = new Map<number, string>()
  const problems: string[] = []
  if (!kv) return { values, problems }
  for (const key of await kv.list(['session', header.id, 'chain'], { limit: 10_000 })) {
    const index = Number(key[3])
    let text: string | undefined
    try {
      text = await kv.get(key)
    } catch (err) {
      if (!isSessionfoldError(err, 'CORRUPT_LOG')) throw err
      problems.push(`block ${key[3]}: ${err.message}`)
      continue
    }
    const marks = Number.isSafeInteger(index) && index >= 0 ? decodePage(text, header.createdAt) : undefined
    if (!marks && outdated(text)) continue
    if (!marks) {
      // Verify has named a page a "block" since 0.1; its reports keep their words.
      problems.push(`block ${key[3]} is not a block of marks of this session (damaged, or of an earlier life of its id)`)
      continue
    }
    marks.forEach((m, slot) => values.set(markPosition(index, slot), m))
  }
  return { values, problems }
}

/** The position of mark `slot` of page `index`. */
export const markPosition = (index: number, slot: number) => index * PAGE_SPAN + (slot + 1) * MARK_EVERY
