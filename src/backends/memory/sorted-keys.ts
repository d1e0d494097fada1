// The memory adapter's record keys in order, so that a list costs its page and not the store:
// flat keys (kv.ts) in sorted chunks of at most CHUNK keys. A key is found by binary search,
// first over the chunks, then in one; an insert or a removal moves at most a chunk's keys (and,
// when a chunk splits or empties, the list of chunks, a store's keys / CHUNK long), never the
// whole store's, as one sorted array would for each put of a new key.

/** Keys per chunk at most; a fuller chunk splits in two halves. */
const CHUNK = 512

/** The first index of sorted `keys` whose key is `key` or after it. */
function lowerBound(keys: readonly string[], key: string): number {
  let lo = 0
  let hi = keys.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (keys[mid]! < key) lo = mid + 1
    else hi = mid
  }
  return lo
}

export interface SortedKeys {
  /** Adds `key` (nothing when it is there). */
  add(key: string): void
  /** Removes `key` (nothing when it is not there). */
  remove(key: string): void
  /** The keys from `start` on (`start` itself included), in order; do not add or remove while iterating. */
  from(start: string): Generator<string>
  /** How many keys there are. */
  readonly size: number
}

export function createSortedKeys(): SortedKeys {
  /** Non-empty sorted chunks, each one's keys before the next one's. */
  const chunks: string[][] = []
  let size = 0

  /** The index of the chunk where `key` is or would go: the last whose first key is at or before it (0 when none is). */
  const chunkOf = (key: string): number => {
    let lo = 0
    let hi = chunks.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (chunks[mid]![0]! <= key) lo = mid + 1
      else hi = mid
    }
    return Math.max(0, lo - 1)
  }

  return {
    get size() {
      return size
    },
    add(key) {
      if (chunks.length === 0) {
        chunks.push([key])
        size = 1
        return
      }
      const at = chunkOf(key)
      const chunk = chunks[at]!
      const i = lowerBound(chunk, key)
      if (chunk[i] === key) return
      chunk.splice(i, 0, key)
      size++
      if (chunk.length > CHUNK) chunks.splice(at + 1, 0, chunk.splice(chunk.length >>> 1))
    },
    remove(key) {
      if (chunks.length === 0) return
      const at = chunkOf(key)
      const chunk = chunks[at]!
      const i = lowerBound(chunk, key)
      if (chunk[i] !== key) return
      chunk.splice(i, 1)
      size--
      if (chunk.length === 0) chunks.splice(at, 1)
    },
    *from(start) {
      if (chunks.length === 0) return
      let at = chunkOf(start)
      let i = lowerBound(chunks[at]!, start)
      for (; at < chunks.length; at++, i = 0) {
        const chunk = chunks[at]!
        for (; i < chunk.length; i++) yield chunk[i]!
      }
    },
  }
}
